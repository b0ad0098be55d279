"""Bearer keys from ``[[api.keys]]``: hashed at load, compared in constant time.

Only the sha256 of each secret is kept; a presented key is hashed and compared with
``hmac.compare_digest`` against every configured key (no early exit), so timing says
nothing about which key or prefix matched. A key is never logged or echoed. ``admin``
implies every role. With no key configured the service is open (loopback only: ``serve``
refuses a non-loopback bind without keys) and every caller is a local admin.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from headwater.config import ApiKeySection
from headwater.errors import ConfigError

# Declares the bearer scheme in /openapi.json; ``caller_of`` reads the header itself.
BEARER = HTTPBearer(auto_error=False, description="A secret from [[api.keys]].")


def digest(secret: str) -> bytes:
    """The sha256 of a key's secret, as the ring keeps it."""
    return hashlib.sha256(secret.encode("utf-8")).digest()


@dataclass(frozen=True)
class Caller:
    """Who is calling: the key's name and role, and what it may assert."""

    name: str
    role: str
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    fixed_principals: bool = False
    assert_principals: bool = False
    sources: tuple[str, ...] | None = None  # what an ingest key may push to; None: all

    def has(self, role: str) -> bool:
        """Whether the caller holds ``role`` (admin holds every role)."""
        return self.role == "admin" or self.role == role

    def may_push(self, source_id: str) -> bool:
        """Whether the caller may push documents to ``source_id``."""
        return self.role == "admin" or (self.sources is not None and source_id in self.sources)


@dataclass
class KeyRing:
    """The configured keys by the sha256 of their secret."""

    keys: list[tuple[bytes, Caller]] = field(default_factory=list)
    compare: Callable[[bytes, bytes], bool] = hmac.compare_digest

    @classmethod
    def from_config(cls, sections: Sequence[ApiKeySection]) -> KeyRing:
        """The ring of the ``[[api.keys]]`` sections; ConfigError on a shared secret."""
        ring = cls()
        names_of: dict[bytes, str] = {}
        for key in sections:
            hashed = digest(key.secret.get_secret_value())
            if hashed in names_of:
                raise ConfigError(
                    f"api.keys (name={names_of[hashed]}) and (name={key.name}) have the same "
                    "secret, so a request could not tell them apart; give each key its own."
                )
            names_of[hashed] = key.name
            p = key.principals
            if p is not None and len(p.users) > 1:
                raise ConfigError(
                    f"api.keys (name={key.name}).principals.users has {len(p.users)} users; "
                    "a key searches as at most one user. Use groups, or one key per user."
                )
            ring.keys.append(
                (
                    hashed,
                    Caller(
                        name=key.name,
                        role=key.role,
                        users=tuple(p.users) if p else (),
                        groups=tuple(p.groups) if p else (),
                        fixed_principals=p is not None,
                        assert_principals=key.assert_principals or key.role == "admin",
                        sources=None if key.role == "admin" else tuple(key.sources),
                    ),
                )
            )
        return ring

    @property
    def open(self) -> bool:
        """Whether no key is configured (every caller is a local admin)."""
        return not self.keys

    def identify(self, presented: str) -> Caller | None:
        """The caller whose secret is ``presented``, compared against every key."""
        wanted = digest(presented)
        found: Caller | None = None
        for stored, caller in self.keys:
            if self.compare(wanted, stored) and found is None:
                found = caller
        return found


LOCAL_ADMIN = Caller(name="local", role="admin", assert_principals=True)


def bearer(request: Request) -> str | None:
    """The bearer token of the request, or None."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def caller_of(request: Request) -> Caller | None:
    """The caller of a request: by bearer key, or by admin session cookie."""
    ring: KeyRing = request.app.state.keys
    if ring.open:
        return LOCAL_ADMIN
    token = bearer(request)
    if token is not None:
        return ring.identify(token)
    return None


UNAUTHENTICATED = (
    "missing or unknown API key; send `Authorization: Bearer <secret>` "
    "with a key from [[api.keys]]."
)


class Require:
    """A FastAPI dependency: 401 without a valid key, 403 when its role is not enough.

    A class, not a closure, so that the request guard (``headwater.api.guard``) can read
    a route's ``role`` and check the caller before anything reads the request body.
    A coroutine, though it never waits: FastAPI runs a plain function dependency on a
    thread of its pool, a hand-off and back for every request (docs/performance.md,
    "Searches on the event loop's thread").
    """

    def __init__(self, role: str) -> None:
        self.role = role

    def check(self, request: Request) -> Caller:
        """The caller if it holds the role; 401 without a valid key, 403 without the role."""
        caller = caller_of(request)
        if caller is None:
            raise HTTPException(401, UNAUTHENTICATED, headers={"WWW-Authenticate": "Bearer"})
        if not caller.has(self.role):
            raise HTTPException(
                403,
                f"key {caller.name!r} has role {caller.role!r}; this needs role {self.role!r}.",
            )
        return caller

    async def __call__(
        self, request: Request, _declared: HTTPAuthorizationCredentials | None = Depends(BEARER)
    ) -> Caller:
        return self.check(request)


def require(role: str) -> Require:
    """The dependency of a route that needs ``role`` (see ``Require``)."""
    return Require(role)


def require_source(caller: Caller, source_id: str) -> None:
    """403 unless ``caller`` may push to ``source_id``: an ingest key only to the sources
    its ``sources = [...]`` names; the answer names those, never any other source."""
    if caller.may_push(source_id):
        return
    mine = ", ".join(repr(s) for s in caller.sources or ()) or "none"
    raise HTTPException(
        403,
        f"key {caller.name!r} may not push to source {source_id!r}; it may push to: {mine}. "
        f'Add the source to `sources = [...]` of its [[api.keys]] entry (name = "{caller.name}").',
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address."""
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, ring: KeyRing) -> None:
    """Refuse to serve beyond this machine with no key configured."""
    if ring.open and not is_loopback(host):
        raise ConfigError(
            f"--host {host} is not a loopback address and no API key is configured; "
            "add an api.keys table to headwater.toml (role admin, search or ingest) "
            "or bind to 127.0.0.1."
        )
