"""Shared HTTP client for the connectors that read the public web (``web``, ``rss``).

``HttpClient`` wraps one httpx client with the configured user agent and timeouts, a
per-host rate limit and a body size cap. Transport faults, 429 and 5xx become
``TransientError`` (with the server's Retry-After) and are retried through the one retry
helper, ``headwater.retry``; every other status comes back as data, so each connector
decides what a 304, a 404 or a redirect means for its documents. ``probe`` turns the
first request of ``validate()`` into one line a user can act on. ``MissingAtServer`` and
``Params`` are shared by the JSON API clients (Atlassian, GitHub).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin, urlsplit

import httpx

from headwater.errors import ConfigError, CredentialError, ItemError, TransientError
from headwater.retry import RetryPolicy, call_with_retry

TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 10

# Query parameters of the JSON API clients (Atlassian, GitHub).
Params = Mapping[str, str | int]


class MissingAtServer(ItemError):
    """The server answered 404 for something we asked for by name or id."""

    def __init__(self, message: str) -> None:
        super().__init__("not_found", message, permanent=True)


@dataclass(frozen=True)
class HttpSettings:
    """How politely and how patiently to talk to a web server."""

    user_agent: str
    timeout: float = 30.0
    requests_per_second: float = 2.0
    max_attempts: int = 4
    initial_wait: float = 0.5
    max_retry_wait: float = 60.0

    @property
    def policy(self) -> RetryPolicy:
        """The retry policy these settings configure."""
        return RetryPolicy(
            attempts=self.max_attempts, initial_wait=self.initial_wait, max_wait=self.max_retry_wait
        )


@dataclass(frozen=True)
class Fetched:
    """One final response: ``url`` is where it came from after the redirects followed."""

    url: str
    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def media_type(self) -> str:
        """The response's media type, lowercased, parameters dropped."""
        return media_type_of(self.headers)

    @property
    def location(self) -> str | None:
        """The absolute redirect target of a 3xx response, if any."""
        target = self.headers.get("location")
        return urljoin(self.url, target) if target else None


def media_type_of(headers: httpx.Headers) -> str:
    """The media type of ``headers``' Content-Type, lowercased, parameters dropped."""
    return str(headers.get("content-type", "")).split(";", 1)[0].strip().lower()


def header_charset(headers: httpx.Headers) -> str | None:
    """The ``charset`` parameter of the response's Content-Type, if any."""
    content_type: str = headers.get("content-type", "")
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.strip().lower() == "charset" and value.strip("\"' "):
            return value.strip("\"' ")
    return None


# Labels a server sends by default whatever the file holds (Apache's AddDefaultCharset,
# Tomcat): trusted only when the body is not valid UTF-8 with non-ASCII bytes in it.
_DEFAULT_LABELS = frozenset({"iso-8859-1", "latin-1", "latin1", "us-ascii", "windows-1252"})


def served_charset(headers: httpx.Headers, body: bytes) -> str | None:
    """The charset the body is in by its Content-Type; None when it names none, or when
    it is a Latin-1 label on a body that is valid, non-ASCII UTF-8 (a server default)."""
    charset = header_charset(headers)
    if charset is not None and charset.lower() in _DEFAULT_LABELS and not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return charset
        return None
    return charset


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - (now or datetime.now(UTC))).total_seconds())


class HostRateLimiter:
    """At most ``rate`` request starts per second per host, shared by every thread."""

    def __init__(
        self,
        rate: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._interval = 1.0 / rate if rate > 0 else 0.0
        self._clock = clock
        self._sleep = sleep
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, host: str) -> None:
        """Sleep until the next request to ``host`` is allowed."""
        if self._interval <= 0:
            return
        with self._lock:
            now = self._clock()
            start = max(now, self._next.get(host, now))
            self._next[host] = start + self._interval
        if start > now:
            self._sleep(start - now)


def is_http_url(url: str) -> bool:
    """True for an absolute http(s) URL with a host."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def host_of(url: str) -> str:
    """The scheme and host of ``url``, lowercased."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def describe_network_error(exc: httpx.HTTPError, url: str) -> str:
    """One line naming a transport fault; connection refused is named as such."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    where = f"{parts.hostname}:{port}"
    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError) and "refused" in text.lower():
        return f"connection to {where} refused"
    if isinstance(exc, httpx.TimeoutException):
        return f"request to {where} timed out ({type(exc).__name__})"
    return f"request to {where} failed: {text}"


class HttpClient:
    """Rate-limited, retried GETs with a size cap; redirects followed only where allowed."""

    def __init__(self, settings: HttpSettings, transport: httpx.BaseTransport | None = None):
        self.settings = settings
        self._limiter = HostRateLimiter(settings.requests_per_second)
        self._client = httpx.Client(
            headers={"User-Agent": settings.user_agent},
            timeout=settings.timeout,
            follow_redirects=False,
            transport=transport,
        )

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def get(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        max_bytes: int = 10 * 1024 * 1024,
        follow: Callable[[str], bool] | None = None,
        accept: Collection[str] | None = None,
        policy: RetryPolicy | None = None,
    ) -> Fetched:
        """GET ``url``; follow a redirect while ``follow(target)`` says yes.

        Raises TransientError (after retries) for transport faults, 429 and 5xx, and
        ItemError for a body over ``max_bytes`` or too many redirects. A 200 whose media
        type is not in ``accept`` comes back with an empty body (it was never read).
        """
        current = url

        def attempt() -> Fetched:
            return self._once(current, headers or {}, max_bytes, accept)

        for _ in range(MAX_REDIRECTS + 1):
            fetched = call_with_retry(attempt, policy or self.settings.policy)
            target = fetched.location if fetched.status in REDIRECT_STATUSES else None
            if target is None or follow is None or not follow(target):
                return fetched
            current = target
        raise ItemError("too_many_redirects", f"{url} redirected more than {MAX_REDIRECTS} times")

    def _once(
        self, url: str, headers: dict[str, str], max_bytes: int, accept: Collection[str] | None
    ) -> Fetched:
        self._limiter.wait(host_of(url))
        try:
            with self._client.stream("GET", url, headers=headers) as response:
                status = response.status_code
                if status in TRANSIENT_STATUSES:
                    raise TransientError(
                        f"{url} returned HTTP {status}; the server is busy or failing",
                        retry_after=parse_retry_after(response.headers.get("retry-after")),
                    )
                read_body = status == 200 and (
                    accept is None or media_type_of(response.headers) in accept
                )
                body = _read_capped(response, url, max_bytes) if read_body else b""
                return Fetched(str(response.url), status, response.headers, body)
        except httpx.HTTPError as exc:
            raise TransientError(describe_network_error(exc, url)) from exc

    def probe(self, url: str, *, option: str, what: str) -> Fetched:
        """The first request of ``validate()``: one try, one actionable line on failure."""
        try:
            fetched = self.get(
                url,
                max_bytes=1024 * 1024,
                follow=lambda _target: True,
                policy=RetryPolicy(attempts=1),
            )
        except TransientError as exc:
            if isinstance(exc.__cause__, httpx.HTTPError):
                raise TransientError(
                    f"`{option}` {url}: {exc}; expected a web server answering there; check "
                    "the host, the port and that the server is running"
                ) from exc
            raise TransientError(f"`{option}` {exc}; try again later") from exc
        except ItemError as exc:
            raise ConfigError(f"`{option}` {url}: {exc}; fix the URL in `{option}`") from exc
        raise_for_probe(fetched, option=option, what=what, user_agent=self.settings.user_agent)
        return fetched


def raise_for_probe(fetched: Fetched, *, option: str, what: str, user_agent: str) -> None:
    """Raise the error a user can act on when ``validate()``'s probe did not get a 2xx/304."""
    status, url = fetched.status, fetched.url
    if status < 300 or status == 304:
        return
    if status == 401:
        raise CredentialError(
            f"`{option}` {url} returned HTTP 401 Unauthorized; expected a {what} readable "
            f"without logging in; point `{option}` at a public URL"
        )
    if status == 403:
        raise CredentialError(
            f"`{option}` {url} returned HTTP 403 Forbidden to user agent {user_agent!r}; "
            f"expected access to the {what}; check the URL, set `user_agent` to one the site "
            "allows, or ask the site owner"
        )
    if status in (404, 410):
        raise ConfigError(
            f"`{option}` {url} returned HTTP {status} Not Found; expected a {what} at that "
            f"address; fix the URL in `{option}`"
        )
    if status in REDIRECT_STATUSES:
        raise ConfigError(
            f"`{option}` {url} redirects to {fetched.location}; expected the {what} itself; "
            f"put the final address in `{option}`"
        )
    raise ConfigError(
        f"`{option}` {url} returned HTTP {status}; expected a {what}; check the URL in `{option}`"
    )


def _read_capped(response: httpx.Response, url: str, max_bytes: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise ItemError("too_large", f"{url} is {declared} bytes; the limit is {max_bytes}")
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ItemError("too_large", f"{url} is over the limit of {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
