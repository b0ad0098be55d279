"""The ``vendor_case`` fixture of the round trip's vendor modules
(``test_roundtrip_vendors.py``, ``test_roundtrip_messages.py``): a case's fake, started
in this process and filled directly (no HTTP calls to fill it), and the case on it. The
round trip itself is ``roundtrip_run.round_trip``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from vendor_cases import GithubCase, GitlabCase, NotionCase, ServicenowCase, ZendeskCase

from fakes.github import FakeGithub
from fakes.gitlab import FakeGitlab
from fakes.notion import FakeNotion
from fakes.servicenow import FakeServicenow
from fakes.zendesk import FakeZendesk


@pytest.fixture
def vendor_case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    kind = str(request.param)
    with ExitStack() as stack:
        if kind == "github":
            yield GithubCase(stack.enter_context(FakeGithub()))
        elif kind == "gitlab":
            yield GitlabCase(stack.enter_context(FakeGitlab()))
        elif kind == "notion":
            yield NotionCase(stack.enter_context(FakeNotion()))
        elif kind == "zendesk":
            yield ZendeskCase(stack.enter_context(FakeZendesk()))
        elif kind == "servicenow":
            yield ServicenowCase(stack.enter_context(FakeServicenow()))
        else:
            raise AssertionError(f"no round-trip case named {kind!r}")
