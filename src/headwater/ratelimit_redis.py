"""The rate-limit governor's budgets in Redis: one hash per credential, changed by Lua.

Under Celery with a Redis broker (or with ``[ratelimit] store = "redis"``) the budgets
live in Redis instead of the manifest, so workers on many hosts spend one credential's
budget without a write transaction on the manifest per request. Each credential is one
hash, ``{prefix}cred:{sha256 of the secret}``, holding the GCRA state of ``ratelimit``
(``tat:{period}`` per rate), ``blocked_until`` and ``reason``. A reservation and a block
are one Lua script each, so they are atomic on the server: the script reads the state,
decides exactly as ``ratelimit.reserve`` and ``ratelimit.block`` do, and writes it back.
The clock is the Redis server's (``TIME``), so hosts whose clocks differ still agree;
the answer is a wait in seconds, slept by the caller. A hash left alone long enough
that its buckets are full again expires (at least two days, longer while a block or a
daily quota's state is still ahead). ``{prefix}sources:{tenant}`` maps each source of a
workspace to its credential key, for `status`. A Redis that cannot be reached is a
``TransientError`` naming the URL (its password masked): the request is retried as any.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis

from headwater.errors import TransientError
from headwater.ratelimit import Rate, Throttled

KEEP_S = 2 * 86_400
"""The least time a credential's hash is kept after its last change."""

# KEYS[1]: the credential's hash. ARGV: now ("" = the server's TIME), vendor, n, then n
# triples (period_s, interval, tolerance). Mirrors ratelimit.reserve; returns the wait.
RESERVE = """
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[1])
end
local n = tonumber(ARGV[3])
local start = math.max(now, tonumber(redis.call('HGET', KEYS[1], 'blocked_until') or '0'))
local tats = {}
for i = 0, n - 1 do
  local field = 'tat:' .. ARGV[4 + 3 * i]
  tats[i] = tonumber(redis.call('HGET', KEYS[1], field) or '0')
  start = math.max(start, tats[i] - tonumber(ARGV[6 + 3 * i]))
end
local latest = now
for i = 0, n - 1 do
  local moved = math.max(tats[i], start) + tonumber(ARGV[5 + 3 * i])
  redis.call('HSET', KEYS[1], 'tat:' .. ARGV[4 + 3 * i], string.format('%.6f', moved))
  latest = math.max(latest, moved)
end
redis.call('HSETNX', KEYS[1], 'vendor', ARGV[2])
local ttl = math.ceil(latest - now) + tonumber(ARGV[#ARGV])
local left = redis.call('TTL', KEYS[1])
redis.call('EXPIRE', KEYS[1], math.max(ttl, left))
return string.format('%.6f', start - now)
"""

# KEYS[1]: the credential's hash. ARGV: now ("" = TIME), vendor, seconds, reason, n,
# then n pairs (period_s, tolerance), then the keep time. Mirrors ratelimit.block.
BLOCK = """
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[1])
end
local blocked = tonumber(redis.call('HGET', KEYS[1], 'blocked_until') or '0')
local till = math.max(blocked, now + tonumber(ARGV[3]))
local n = tonumber(ARGV[5])
local latest = till
for i = 0, n - 1 do
  local field = 'tat:' .. ARGV[6 + 2 * i]
  local tat = tonumber(redis.call('HGET', KEYS[1], field) or '0')
  local moved = math.max(tat, till + tonumber(ARGV[7 + 2 * i]))
  redis.call('HSET', KEYS[1], field, string.format('%.6f', moved))
  latest = math.max(latest, moved)
end
redis.call('HSET', KEYS[1], 'blocked_until', string.format('%.6f', till), 'reason', ARGV[4])
redis.call('HSETNX', KEYS[1], 'vendor', ARGV[2])
local ttl = math.ceil(latest - now) + tonumber(ARGV[#ARGV])
local left = redis.call('TTL', KEYS[1])
redis.call('EXPIRE', KEYS[1], math.max(ttl, left))
return string.format('%.6f', till)
"""


def shown_url(url: str) -> str:
    """``url`` with its password masked, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class RedisRateLedger:
    """The shared budgets in Redis (a ``ratelimit.RateStore``), one hash per credential.

    ``clock`` replaces the server's ``TIME`` (tests compare the scripts with the pure
    functions on one clock); None, the default, uses the server's."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "headwater:ratelimit:",
        tenant: str = "default",
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.tenant = tenant
        self.clock = clock
        self._redis: Any = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)
        self._reserve = self._redis.register_script(RESERVE)
        self._block = self._redis.register_script(BLOCK)

    def _key(self, key: str) -> str:
        return f"{self.prefix}cred:{key}"

    def _now(self) -> str:
        return "" if self.clock is None else repr(self.clock())

    def _call(self, what: str, run: Callable[[], Any]) -> Any:
        try:
            return run()
        except redis.RedisError as exc:
            raise TransientError(
                f"the rate-limit budgets in Redis at {shown_url(self.url)} could not be "
                f"{what} ({type(exc).__name__}: {exc}); expected Redis to answer there; "
                "check [ratelimit] url (or the Celery broker) and that Redis is up"
            ) from None

    def register(self, source_id: str, key: str) -> None:
        """Record that ``source_id`` reads with the credential ``key`` (for `status`)."""
        sources = f"{self.prefix}sources:{self.tenant}"
        self._call("written", lambda: self._redis.hset(sources, source_id, key))

    def reserve(self, key: str, vendor: str, rates: Sequence[Rate]) -> float:
        """Reserve one request on ``key``'s budget; the seconds to wait before sending it."""
        args: list[str | int | float] = [self._now(), vendor, len(rates)]
        for rate in rates:
            args += [rate.period_s, repr(rate.interval), repr(rate.tolerance)]
        args.append(KEEP_S)
        wait = self._call("read", lambda: self._reserve(keys=[self._key(key)], args=args))
        return max(0.0, float(wait))

    def block(
        self, key: str, vendor: str, seconds: float, reason: str, rates: Sequence[Rate]
    ) -> None:
        """Block ``key`` for ``seconds`` from now for everyone (never shortening a block)."""
        args: list[str | int | float] = [
            self._now(),
            vendor,
            repr(float(seconds)),
            reason,
            len(rates),
        ]
        for rate in rates:
            args += [rate.period_s, repr(rate.tolerance)]
        args.append(KEEP_S)
        self._call("written", lambda: self._block(keys=[self._key(key)], args=args))

    def state(self, key: str) -> tuple[dict[int, float], float]:
        """A credential's buckets (``tat`` by period) and the end of its block."""
        raw = self._call("read", lambda: self._redis.hgetall(self._key(key)))
        fields = {k.decode(): v.decode() for k, v in raw.items()}
        tats = {int(f[4:]): float(v) for f, v in fields.items() if f.startswith("tat:")}
        return tats, float(fields.get("blocked_until", 0.0))

    def throttled(self) -> dict[str, Throttled]:
        """The sources whose credential is blocked now, by source id."""
        sources = f"{self.prefix}sources:{self.tenant}"

        def read() -> tuple[float, dict[str, tuple[float, str]]]:
            if self.clock is None:
                seconds, micros = self._redis.time()
                now = seconds + micros / 1e6
            else:
                now = self.clock()
            found: dict[str, tuple[float, str]] = {}
            for source, key in self._redis.hgetall(sources).items():
                until, reason = self._redis.hmget(
                    self._key(key.decode()), "blocked_until", "reason"
                )
                if until is not None:
                    found[source.decode()] = (float(until), (reason or b"").decode())
            return now, found

        now, found = self._call("read", read)
        return {
            source: Throttled(source, datetime.fromtimestamp(until, UTC), reason)
            for source, (until, reason) in sorted(found.items())
            if until > now
        }

    def close(self) -> None:
        """Close the connection pool."""
        self._redis.close()
