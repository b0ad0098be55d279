"""A fake Google token endpoint and Gmail API: delegated tokens, messages, history.

- the OAuth 2.0 JWT bearer flow with domain-wide delegation: ``POST /token`` with
  ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` and an RS256 ``assertion``
  (verified with the service account's public key) naming ``sub`` and ``scope``; a user
  outside the domain answers 400 ``invalid_grant``, a scope not delegated 401
  ``unauthorized_client``:
  https://developers.google.com/identity/protocols/oauth2/service-account#delegatingauthority
  https://developers.google.com/identity/protocols/oauth2/service-account#error-codes
- ``users.getProfile`` (``historyId``), ``users.messages.list`` (``labelIds``,
  ``maxResults``, ``pageToken``, ``nextPageToken``; spam and trash left out),
  ``users.messages.get`` with ``format=raw`` (base64url RFC 822):
  https://developers.google.com/gmail/api/reference/rest/v1/users/getProfile
  https://developers.google.com/gmail/api/reference/rest/v1/users.messages/list
  https://developers.google.com/gmail/api/reference/rest/v1/users.messages/get
- ``users.history.list`` (``startHistoryId``, ``historyTypes``, ``labelId``, ``pageToken``):
  records with ``messagesAdded``, ``messagesDeleted``, ``labelsAdded``, ``labelsRemoved``
  and the mailbox's current ``historyId``; a ``startHistoryId`` older than the history
  kept answers 404: https://developers.google.com/gmail/api/reference/rest/v1/users.history/list
  https://developers.google.com/gmail/api/guides/sync#limitations
- errors ``{"error": {"code", "message", "errors": [{"reason"}], "status"}}``; rate limits
  429 (and 403 ``userRateLimitExceeded``) with ``Retry-After``:
  https://developers.google.com/gmail/api/guides/handle-errors
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["FakeGmail", "Mailbox"]

SCOPE = "https://www.googleapis.com/auth/gmail.readonly"


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def google_error(code: int, reason: str, message: str, status: str) -> Answer:
    body = {"code": code, "message": message, "errors": [{"reason": reason, "message": message}]}
    return Answer(code, {"error": body | {"status": status}})


@dataclass
class Mailbox:
    messages: dict[str, tuple[bytes, set[str]]] = field(default_factory=dict)  # id -> raw, labels
    history: list[dict[str, Any]] = field(default_factory=list)
    history_id: int = 1000
    oldest_kept: int = 0  # history before this id is gone


class FakeGmail(FakeApi):
    """``with FakeGmail() as gm: gm.add("ann@acme.com", "m1", raw, {"INBOX"})``."""

    def __init__(self) -> None:
        super().__init__(token="unused")
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._public = key.public_key()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        self.key_json = json.dumps(
            {"type": "service_account", "client_email": "sync@acme.iam.gserviceaccount.com",
             "private_key": pem, "token_uri": f"{self.url}/token"}
        )  # fmt: skip
        self.mailboxes: dict[str, Mailbox] = {}
        self.delegated = True  # domain-wide delegation granted for the Gmail scope
        self.rate_limited = 0
        self.retry_after = "0"
        self._tokens: dict[str, str] = {}

    def authorized(self, headers: dict[str, str]) -> bool:
        return True  # answered in `answer`

    def add(self, user: str, mid: str, raw: bytes, labels: set[str]) -> None:
        with self.lock:
            box = self.mailboxes.setdefault(user, Mailbox())
            box.messages[mid] = (raw, set(labels))
            self._record(box, {"messagesAdded": [{"message": self._ref(mid, labels)}]})

    def remove(self, user: str, mid: str) -> None:
        with self.lock:
            box = self.mailboxes[user]
            _, labels = box.messages.pop(mid)
            self._record(box, {"messagesDeleted": [{"message": self._ref(mid, labels)}]})

    def relabel(self, user: str, mid: str, add: set[str], drop: set[str]) -> None:
        with self.lock:
            box = self.mailboxes[user]
            raw, labels = box.messages[mid]
            labels = (labels | add) - drop
            box.messages[mid] = (raw, labels)
            if add:
                self._record(
                    box,
                    {"labelsAdded": [{"message": self._ref(mid, labels), "labelIds": sorted(add)}]},
                )
            if drop:
                self._record(
                    box,
                    {
                        "labelsRemoved": [
                            {"message": self._ref(mid, labels), "labelIds": sorted(drop)}
                        ]
                    },
                )

    def _ref(self, mid: str, labels: set[str]) -> dict[str, Any]:
        return {"id": mid, "threadId": "t" + mid, "labelIds": sorted(labels)}

    def _record(self, box: Mailbox, change: dict[str, Any]) -> None:
        box.history_id += 1
        box.history.append({"id": str(box.history_id)} | change)

    def answer(self, call: Call) -> Answer:
        if call.method == "POST" and call.path == "/token":
            return self._token(call)
        if self.rate_limited > 0:
            self.rate_limited -= 1
            answer = google_error(
                429, "rateLimitExceeded", "Too many requests", "RESOURCE_EXHAUSTED"
            )
            answer.headers["Retry-After"] = self.retry_after
            return answer
        auth = call.headers.get("authorization", "").removeprefix("Bearer ")
        parts = call.path.removeprefix("/gmail/v1/users/").split("/")
        user = unquote(parts[0])
        if self._tokens.get(auth) != user:
            return google_error(401, "authError", "Invalid Credentials", "UNAUTHENTICATED")
        box = self.mailboxes.setdefault(user, Mailbox())
        q, rest = call.query, parts[1:]
        if rest == ["profile"]:
            return Answer(
                200,
                {
                    "emailAddress": user,
                    "messagesTotal": len(box.messages),
                    "historyId": str(box.history_id),
                },
            )
        if rest == ["messages"]:
            label = q.get("labelIds")
            ids = [m for m, (_, labels) in sorted(box.messages.items(), reverse=True)
                   if (label in labels if label else not labels & {"SPAM", "TRASH"})]  # fmt: skip
            return self._page(q, "messages", [{"id": m, "threadId": "t" + m} for m in ids])
        if len(rest) == 2 and rest[0] == "messages":
            found = box.messages.get(rest[1])
            if found is None:
                return google_error(404, "notFound", "Requested entity was not found.", "NOT_FOUND")
            raw = base64.urlsafe_b64encode(found[0]).decode().rstrip("=")
            return Answer(200, {"id": rest[1], "labelIds": sorted(found[1]), "raw": raw})
        if rest == ["history"]:
            start = int(q.get("startHistoryId", "0"))
            if start < box.oldest_kept:
                return google_error(404, "notFound", "Requested entity was not found.", "NOT_FOUND")
            records = [r for r in box.history if int(r["id"]) > start]
            label = q.get("labelId")
            if label:
                records = [
                    r
                    for r in records
                    if any(
                        label in x["message"]["labelIds"]
                        for v in r.values()
                        if isinstance(v, list)
                        for x in v
                    )
                ]
            answer = self._page(q, "history", records)
            answer.body["historyId"] = str(box.history_id)
            return answer
        return google_error(404, "notFound", "Not Found", "NOT_FOUND")

    def _page(self, q: dict[str, str], key: str, rows: list[Any]) -> Answer:
        size = int(q.get("maxResults", 100))
        start = int(q.get("pageToken", "0") or 0)
        body: dict[str, Any] = {key: rows[start : start + size]}
        if start + size < len(rows):
            body["nextPageToken"] = str(start + size)
        return Answer(200, body)

    def _token(self, call: Call) -> Answer:
        form = {k: v[-1] for k, v in parse_qs(call.body.decode()).items()}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return Answer(400, {"error": "unsupported_grant_type"})
        head, claims_b64, signature = form.get("assertion", "..").split(".")
        try:
            self._public.verify(
                _unb64(signature),
                f"{head}.{claims_b64}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except Exception:
            return Answer(
                400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
            )
        claims = json.loads(_unb64(claims_b64))
        if not self.delegated or claims.get("scope") != SCOPE:
            return Answer(401, {"error": "unauthorized_client", "error_description": "Client is unauthorized to retrieve access tokens using this method, or client not authorized for any of the scopes requested."})  # fmt: skip
        user = str(claims.get("sub", ""))
        if user not in self.mailboxes:
            return Answer(
                400, {"error": "invalid_grant", "error_description": "Invalid email or User ID"}
            )
        token = f"ya29.{user}.{len(self._tokens)}"
        self._tokens[token] = user
        return Answer(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})
