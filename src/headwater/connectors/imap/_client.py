"""The IMAP session: imaplib behind a small, counted, read-only surface.

Every mailbox is opened with ``EXAMINE`` (read-only) and every body is read with
``BODY.PEEK``, so a sync never sets ``\\Seen``. Each IMAP command the connector sends is
counted in ``ImapSession.commands`` (a test seam: a no-op re-sync must send no ``FETCH``
of a body). Socket faults become ``TransientError``; a refused login or an unknown
mailbox becomes ``CredentialError`` or ``ConfigError`` with a message naming the fix.
"""

from __future__ import annotations

import base64
import contextlib
import imaplib
import re
import ssl
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from headwater.connectors.imap._message import Token, parse_sexp
from headwater.errors import ConfigError, CredentialError, TransientError

_UID = re.compile(rb"UID (\d+)")


@dataclass(frozen=True)
class ImapAddress:
    """Where and how to connect."""

    host: str
    port: int
    use_ssl: bool
    starttls: bool
    username: str
    password: str
    timeout: float

    @property
    def where(self) -> str:
        """``host:port``, as messages show it."""
        return f"{self.host}:{self.port}"


class ImapSession:
    """One logged-in IMAP connection; use as a context manager."""

    def __init__(self, address: ImapAddress, commands: Counter[str] | None = None) -> None:
        self.address = address
        self.commands: Counter[str] = commands if commands is not None else Counter()
        self._imap = self._connect()

    def _connect(self) -> imaplib.IMAP4:
        a = self.address
        try:
            imap: imaplib.IMAP4
            if a.use_ssl:
                imap = imaplib.IMAP4_SSL(a.host, a.port, timeout=a.timeout)
            else:
                imap = imaplib.IMAP4(a.host, a.port, timeout=a.timeout)
                if a.starttls:
                    imap.starttls(ssl.create_default_context())
        except ConnectionRefusedError as exc:
            raise TransientError(
                f"imap `host`/`port` {a.where}: connection refused; expected an IMAP server "
                "there; check the host, the port (993 with ssl, 143 without) and that the "
                "server is running"
            ) from exc
        except (OSError, imaplib.IMAP4.error) as exc:
            raise TransientError(
                f"imap {a.where}: could not connect ({type(exc).__name__}: {exc}); check the "
                "host, the port and the `ssl`/`starttls` options"
            ) from exc
        try:
            self.commands["LOGIN"] += 1
            imap.login(a.username, a.password)
        except imaplib.IMAP4.error as exc:
            imap.shutdown()
            raise CredentialError(
                f"imap {a.where}: login as {a.username!r} was refused ({_text(exc)}); expected "
                "a valid username and password; fix `username`/`password` (or its ${ENV} "
                "variable)"
            ) from exc
        return imap

    def __enter__(self) -> ImapSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Log out, ignoring a connection already gone."""
        with contextlib.suppress(OSError, imaplib.IMAP4.error):
            self._imap.logout()

    def _run(self, name: str, fn: Any, *args: Any) -> list[Any]:
        self.commands[name] += 1
        try:
            status, data = fn(*args)
        except (TimeoutError, OSError, imaplib.IMAP4.abort) as exc:
            raise TransientError(
                f"imap {self.address.where}: {name} failed ({type(exc).__name__}: {exc}); "
                "the connection broke; the run is retried from its checkpoint"
            ) from exc
        except imaplib.IMAP4.error as exc:
            raise TransientError(f"imap {self.address.where}: {name} failed: {_text(exc)}") from exc
        if status != "OK":
            raise TransientError(f"imap {self.address.where}: {name} answered {status}: {data!r}")
        return list(data)

    def examine(self, mailbox: str) -> int:
        """Open ``mailbox`` read-only; return its UIDVALIDITY."""
        self.commands["EXAMINE"] += 1
        try:
            status, data = self._imap.select(_quote(mailbox), readonly=True)
        except (OSError, imaplib.IMAP4.abort) as exc:
            raise TransientError(
                f"imap {self.address.where}: EXAMINE {mailbox!r} failed ({exc}); the connection "
                "broke; the run is retried from its checkpoint"
            ) from exc
        if status != "OK":
            raise ConfigError(
                f"imap `mailboxes`: {mailbox!r} cannot be opened on {self.address.where} "
                f"({_text(data)}); expected an existing mailbox; fix the name in `mailboxes` "
                "(names are case-sensitive except INBOX)"
            )
        _, codes = self._imap.response("UIDVALIDITY")
        for code in codes:
            if code:
                return int(code)
        raise TransientError(f"imap {self.address.where}: no UIDVALIDITY for {mailbox!r}")

    def uids_after(self, last_uid: int) -> list[int]:
        """Every UID above ``last_uid`` in the open mailbox, ascending."""
        data = self._run("SEARCH", self._imap.uid, "SEARCH", f"UID {last_uid + 1}:*")
        found = [int(u) for u in b" ".join(d for d in data if d).split()]
        return sorted(u for u in found if u > last_uid)  # "n:*" always holds the top UID

    def fetch(self, uids: list[int], items: str) -> Iterator[tuple[int, bytes, bytes | None]]:
        """``UID FETCH`` ``items`` for ``uids``: (uid, response line, literal or None)."""
        if not uids:
            return
        data = self._run("FETCH", self._imap.uid, "FETCH", _uid_set(uids), items)
        for entry in data:
            if isinstance(entry, tuple):
                line, literal = entry[0], entry[1]
            elif isinstance(entry, bytes) and entry != b")":
                line, literal = entry, None
            else:
                continue
            match = _UID.search(line)
            if match:
                yield int(match.group(1)), line, literal

    def structures(self, uids: list[int]) -> dict[int, Token]:
        """``UID FETCH (BODYSTRUCTURE)``: each UID's response items, parsed."""
        if not uids:
            return {}
        data = self._run("FETCH", self._imap.uid, "FETCH", _uid_set(uids), "(BODYSTRUCTURE)")
        raw = b" ".join(
            e[0] + b"\r\n" + e[1] if isinstance(e, tuple) else e
            for e in data
            if isinstance(e, bytes | tuple)
        )
        found: dict[int, Token] = {}
        for token in parse_sexp(raw):
            if isinstance(token, list):
                items = dict(zip(token[::2], token[1::2], strict=False))
                uid = items.get("UID")
                if isinstance(uid, str) and uid.isdigit():
                    found[int(uid)] = items.get("BODYSTRUCTURE") or []
        return found


def _uid_set(uids: list[int]) -> str:
    return ",".join(str(u) for u in uids)


def _quote(mailbox: str) -> str:
    name = mailbox_utf7(mailbox)
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def mailbox_utf7(name: str) -> str:
    """A mailbox name as IMAP sends it (RFC 3501 section 5.1.3, modified UTF-7):
    ``Entwürfe`` is ``Entw&APw-rfe``. An ASCII name is sent as written, so a name already
    given in modified UTF-7 keeps working."""
    if name.isascii():
        return name
    out: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            encoded = base64.b64encode("".join(pending).encode("utf-16-be")).decode("ascii")
            out.append("&" + encoded.rstrip("=").replace("/", ",") + "-")
            pending.clear()

    for char in name:
        if " " <= char <= "~":
            flush()
            out.append("&-" if char == "&" else char)
        else:
            pending.append(char)
    flush()
    return "".join(out)


def _text(value: object) -> str:
    if isinstance(value, list):
        value = b" ".join(v for v in value if isinstance(v, bytes))
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
