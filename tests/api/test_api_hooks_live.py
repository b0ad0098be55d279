"""A signed GitHub webhook into ``headwater serve --with-scheduler`` (a real process)
against the fake GitHub API: the hint is read by a targeted read of exactly that issue
(no listing asked), and the edit is in the manifest within seconds.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_support import Server

from fakes.github import FakeGithub
from ports import free_port

SECRET = "live-hook-secret-0123456789"
ITEM = re.compile(r"/repos/octo/site/(issues|pulls)/(\d+)(/comments)?")


def wait_for(check: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"not in {timeout}s: {what}")


@pytest.fixture
def gh() -> Iterator[FakeGithub]:
    with FakeGithub() as fake:
        fake.add_repo("octo/site")
        fake.add("octo/site", "Typo on home page", "The word 'teh'")
        fake.add("octo/site", "Slow search", "Takes 3 s")
        yield fake


@pytest.fixture
def live(tmp_path: Path, gh: FakeGithub) -> Iterator[Server]:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\n[embedder]\ntype = "fake"\n'
        f'[[source]]\nid = "gh"\ntype = "github"\nbase_url = "{gh.url}"\n'
        'token = "${HW_GH_TOKEN}"\nrepos = ["octo/site"]\nretry_initial_wait = 0.0\n'
        'webhook_secret = "${HW_GH_HOOK_SECRET}"\nrefresh_every = "1h"\n'
        "access = { public = true }\n"
    )
    os.environ.update(HW_GH_TOKEN=gh.token, HW_GH_HOOK_SECRET=SECRET)
    with Server(config, free_port(), tmp_path / "server.log", args=["--with-scheduler"]) as srv:
        yield srv
        for name in ("HW_GH_TOKEN", "HW_GH_HOOK_SECRET"):
            os.environ.pop(name, None)


def document(srv: Server, object_id: str) -> dict[str, Any] | None:
    answer = httpx.get(f"{srv.url}/v1/documents", params={"source": "gh", "object": object_id})
    return answer.json() if answer.status_code == 200 else None


def test_a_signed_webhook_is_read_by_a_targeted_read(live: Server, gh: FakeGithub) -> None:
    wait_for(lambda: document(live, "octo/site/issues/2") is not None, "the first sync")
    first = document(live, "octo/site/issues/1")
    assert first is not None
    gh.touch("octo/site", 1, body="The word 'teh', fixed")
    gh.touch("octo/site", 2, body="Takes 4 s")  # changed too, but no webhook says so
    gh.clear_log()
    payload = {"action": "edited", "issue": {"number": 1}, "repository": {"full_name": "octo/site"}}
    body = json.dumps(payload).encode()
    mac = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    answer = httpx.post(
        f"{live.url}/v1/hooks/gh",
        content=body,
        headers={"X-GitHub-Event": "issues", "X-Hub-Signature-256": f"sha256={mac}"},
    )
    assert (answer.status_code, answer.json()) == (202, {"queued": 1}), answer.text

    def edited() -> bool:
        now = document(live, "octo/site/issues/1")
        return now is not None and now["revision"] > first["revision"]

    wait_for(edited, "the targeted read of issue 1")
    read = {m.group(2) for c in gh.log if (m := ITEM.fullmatch(c.path))}
    assert read == {"1"}, [c.path for c in gh.log]
    assert not any(c.path == "/repos/octo/site/issues" for c in gh.log), "no listing"
