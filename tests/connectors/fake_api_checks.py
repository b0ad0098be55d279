"""Read checks every connector tested against a fake SaaS API shares (``tests/fakes``).

Each fake answers the next ``rate_limited`` requests with 429 and ``Retry-After:
retry_after``, and logs every call with its status. A connector's read tests subclass
``FakeApiChecks`` and give it a ``fake_api`` fixture (the populated fake, a connector
builder taking option overrides, and how many documents a full read yields) and their
``validate_steps``; the three checks below then run under that connector's own test
module, so a failure names the connector:

- a storm of ``storm`` 429 answers is waited out and the full read still arrives;
- ``Retry-After: 1`` is waited out (the read takes at least a second);
- ``validate()`` passes on the populated fake, then each step in order changes the fake
  and the options and expects ``validate()`` to pass or to raise an error naming what is
  wrong (a refused token, a missing scope, a folder that is not there…).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from headwater.connectors.base import Connector
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.types import Window

EVERYTHING = Window(None, FAR_FUTURE)


@dataclass(frozen=True)
class FakeApi:
    """A populated fake API, a builder of connectors over it, and what a full read yields."""

    fake: Any
    make: Callable[..., Connector]  # keyword arguments override the connector's options
    documents: int


@dataclass(frozen=True)
class ValidateStep:
    """One ``validate()``: ``change`` the fake, build with ``options``, expect ``error``
    matching ``match`` (None: it passes), then ``undo`` the change. ``at_build``: the
    error comes from building the connector (its options), before any ``validate()``."""

    error: type[Exception] | None = None
    match: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    change: Callable[[Any], object] | None = None
    undo: Callable[[Any], object] | None = None
    at_build: bool = False


class FakeApiChecks:
    """Subclass in a connector's read tests; provide a ``fake_api`` fixture."""

    storm: ClassVar[int] = 10  # 429 answers in a row
    storm_attempts: ClassVar[int] = 12  # the connector's retry_attempts for the storm
    storm_fetches: ClassVar[bool] = False  # also fetch every document after the storm
    validate_steps: ClassVar[Sequence[ValidateStep]] = ()

    def test_a_429_storm_is_waited_out(self, fake_api: FakeApi) -> None:
        fake_api.fake.rate_limited = self.storm
        connector = fake_api.make(retry_attempts=self.storm_attempts)
        docs = collect(connector.read(EVERYTHING, None, no_known)).documents
        assert len(docs) == fake_api.documents
        assert sum(1 for c in fake_api.fake.log if c.status == 429) == self.storm
        for doc in docs if self.storm_fetches else ():
            assert connector.fetch(str(doc.fetch_ref))

    def test_retry_after_is_honoured(self, fake_api: FakeApi) -> None:
        fake_api.fake.rate_limited, fake_api.fake.retry_after = 1, "1"
        began = time.monotonic()
        connector = fake_api.make(retry_max_wait=5.0)
        result = collect(connector.read(EVERYTHING, None, no_known))
        assert time.monotonic() - began >= 1.0 and len(result.documents) == fake_api.documents

    def test_validate_names_what_is_wrong(self, fake_api: FakeApi) -> None:
        fake_api.make().validate()
        assert self.validate_steps, "name the refusals validate() must explain"
        for step in self.validate_steps:
            if step.change is not None:
                step.change(fake_api.fake)
            if step.error is None:
                fake_api.make(**step.options).validate()
            elif step.at_build:
                with pytest.raises(step.error, match=step.match):
                    fake_api.make(**step.options)
            else:
                with pytest.raises(step.error, match=step.match):
                    fake_api.make(**step.options).validate()
            if step.undo is not None:
                step.undo(fake_api.fake)
