"""A run the manifest's outage cut off is due again as soon as the manifest answers.

The outage test (``test_scheduler_manifest_outage``) meets this only when the cut lands
inside a run thread rather than in the planner; here both kinds of failure are reaped
directly: a connection error is an outage (a short hold, no traceback), anything else a
crash (the failure backoff, with its traceback).
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from datetime import timedelta

import pytest
from sqlalchemy.exc import OperationalError

from headwater.clock import utcnow
from headwater.manifest.runs import FAILED
from headwater.scheduler.outcome import Outcome
from headwater.scheduler.reaping import MANIFEST_RETRY, reap

BACKOFF = timedelta(minutes=1)


def failed(exc: BaseException) -> Future[Outcome]:
    future: Future[Outcome] = Future()
    future.set_exception(exc)
    return future


def test_a_run_cut_off_by_a_manifest_outage_waits_the_retry_not_the_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cut = OperationalError("SELECT 1", {}, Exception("server closed the connection"))
    outcomes: list[Outcome] = []
    holds: dict = {}
    with caplog.at_level(logging.ERROR, logger="headwater.scheduler"):
        reap({"a": failed(cut)}, outcomes, holds, BACKOFF)
    assert holds["a"] <= utcnow() + MANIFEST_RETRY < utcnow() + BACKOFF
    (outcome,) = outcomes
    assert outcome.status == FAILED and "server closed the connection" in str(outcome.error)
    assert "manifest unreachable" in caplog.text
    assert "crashed" not in caplog.text and "Traceback" not in caplog.text


def test_a_crashed_run_still_waits_the_failure_backoff(caplog: pytest.LogCaptureFixture) -> None:
    outcomes: list[Outcome] = []
    holds: dict = {}
    with caplog.at_level(logging.ERROR, logger="headwater.scheduler"):
        reap({"a": failed(RuntimeError("a bug"))}, outcomes, holds, BACKOFF)
    assert holds["a"] > utcnow() + BACKOFF - timedelta(seconds=5)
    assert "run of a crashed" in caplog.text
