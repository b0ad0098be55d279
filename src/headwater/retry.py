"""The one retry helper: exponential backoff with jitter for transient errors.

Only ``TransientError`` is retried (callers classify first: timeouts, resets, HTTP 429 and
5xx, lock timeouts). A ``retry_after`` hint from the error (HTTP Retry-After) is honoured
as the minimum wait. ``retry_while_sqlite_busy`` is the one exception: the few SQLite
statements that report "database is locked" without waiting out the busy timeout. Built
on tenacity.
"""

from __future__ import annotations

import logging
import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from headwater.errors import TransientError

T = TypeVar("T")
log = logging.getLogger(__name__)


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    wait = state.next_action.sleep if state.next_action else 0.0
    log.info("attempt %d failed (%s); retrying in %.2f s", state.attempt_number, exc, wait)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry. ``attempts`` counts the first try."""

    attempts: int = 3
    initial_wait: float = 0.5
    max_wait: float = 30.0
    jitter: float = 0.5


DEFAULT_POLICY = RetryPolicy()


def _wait(policy: RetryPolicy) -> Callable[[RetryCallState], float]:
    def wait(state: RetryCallState) -> float:
        backoff = min(policy.max_wait, policy.initial_wait * 2 ** (state.attempt_number - 1))
        backoff += random.uniform(0, policy.jitter * backoff)
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            backoff = max(backoff, min(exc.retry_after, policy.max_wait))
        return float(backoff)

    return wait


def call_with_retry(fn: Callable[[], T], policy: RetryPolicy = DEFAULT_POLICY) -> T:
    """Call ``fn``; retry it on TransientError; re-raise the last error when out of tries."""
    retrying = Retrying(
        retry=retry_if_exception_type(TransientError),
        stop=stop_after_attempt(max(1, policy.attempts)),
        wait=_wait(policy),
        before_sleep=_log_retry,
        reraise=True,
    )
    return retrying(fn)


def _sqlite_busy(exc: BaseException) -> bool:
    """sqlite3's "database is locked", or the sqlite sink's driver's busy TransientError."""
    message = str(exc).lower()
    kinds = (sqlite3.OperationalError, TransientError)
    return isinstance(exc, kinds) and ("locked" in message or "busy" in message)


def retry_while_sqlite_busy(fn: Callable[[], T], patience: float = 30.0) -> T:
    """Call ``fn``; while SQLite answers "database is locked", retry for up to ``patience``
    seconds (5 ms doubling to 200 ms between tries), then re-raise.

    For the statements SQLite's busy timeout does not cover: switching a file to WAL, and
    the first read of a WAL file, fail at once while another connection creates the file,
    recovers its WAL or (as the last one to close) checkpoints and deletes it. Each lasts
    milliseconds, so a process opening a file others are opening needs only to wait.
    """
    retrying = Retrying(
        retry=retry_if_exception(_sqlite_busy),
        stop=stop_after_delay(patience),
        wait=wait_exponential(multiplier=0.005, max=0.2),
        reraise=True,
    )
    return retrying(fn)
