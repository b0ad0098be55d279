"""A rate-limited API in the manner of Notion's (test code only): a sliding one-second
budget per credential, and 429 ``rate_limited`` with ``Retry-After`` past it.

Notion documents "an average of three requests per second" per integration, and that a
request over the limit answers HTTP 429 with the code ``rate_limited`` and a
``Retry-After`` header in seconds, to be waited out before the next request:
https://developers.notion.com/reference/request-limits
https://developers.notion.com/reference/status-codes
This fake counts the requests of each ``Authorization`` value over the last second and
answers 429 (``Retry-After: 1``) past ``per_second``; ``block_next(seconds)`` makes the
next request answer 429 with ``Retry-After: seconds`` whatever the count. Every request
is logged with its arrival time (``time.time()``) and status, so a test can count what
arrived in any second.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fakes._server import Answer, FakeService

__all__ = ["Arrival", "RateLimitedApi"]


@dataclass(frozen=True)
class Arrival:
    at: float
    credential: str
    status: int


class RateLimitedApi(FakeService):
    """``GET /v1/users/me`` (the integration's bot) under a per-credential rate limit."""

    def __init__(self, per_second: int) -> None:
        super().__init__()
        self.per_second = per_second
        self.arrivals: list[Arrival] = []
        self._blocks: list[int] = []

    def block_next(self, seconds: int) -> None:
        """Answer the next request 429 with ``Retry-After: seconds``."""
        with self.lock:
            self._blocks.append(seconds)

    def handle(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> Answer:
        now = time.time()
        credential = headers.get("authorization", "")
        recent = [
            a for a in self.arrivals if a.credential == credential and a.status == 200
            and a.at > now - 1.0
        ]  # fmt: skip
        if self._blocks:
            answer = self._limited(self._blocks.pop(0))
        elif len(recent) >= self.per_second:
            answer = self._limited(1)
        else:
            answer = (200, {"object": "user", "type": "bot", "id": "bot-1"}, {})
        self.arrivals.append(Arrival(now, credential, answer[0]))
        return answer

    def _limited(self, seconds: int) -> Answer:
        body = {"object": "error", "status": 429, "code": "rate_limited",
                "message": "You have been rate limited. Please try again in a few minutes."}  # fmt: skip
        return 429, body, {"Retry-After": str(seconds)}

    def most_in_one_second(self, status: int = 200) -> int:
        """The most requests answered ``status`` that arrived within one second."""
        with self.lock:
            times = sorted(a.at for a in self.arrivals if a.status == status)
        return max((sum(1 for u in times if t <= u < t + 1.0) for t in times), default=0)
