"""The one retry helper: exponential backoff with jitter for transient errors.

Only ``TransientError`` is retried (callers classify first: timeouts, resets, HTTP 429 and
5xx, lock timeouts). A ``retry_after`` hint from the error (HTTP Retry-After) is honoured
as the minimum wait. Built on tenacity.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

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
