"""Delegated access tokens for Gmail: a service account acting as each mailbox's user.

With Google Workspace domain-wide delegation, a service-account key signs a JWT whose
``sub`` is the user to act as and whose ``scope`` is ``gmail.readonly``; the key's
``token_uri`` exchanges it for that user's access token, valid an hour
(https://developers.google.com/identity/protocols/oauth2/service-account#delegatingauthority).
Tokens are cached per user until a minute before they expire. ``unauthorized_client``
(delegation not granted for the scope) and ``invalid_grant`` (no such user) are
``CredentialError`` and ``ConfigError`` naming the fix.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from headwater.connectors.http import describe_network_error
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.retry import RetryPolicy, call_with_retry

SCOPE = "https://www.googleapis.com/auth/gmail.readonly"
DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class DelegatedKey:
    """A service-account key that asks for tokens acting as a Workspace user."""

    def __init__(self, key_json: str, *, token_uri: str | None = None) -> None:
        try:
            info: Any = json.loads(key_json)
            self.email = str(info["client_email"])
            key = serialization.load_pem_private_key(info["private_key"].encode(), None)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"gmail `service_account_json` is not a service-account key "
                f"({type(exc).__name__}); expected the JSON key with `client_email` and "
                "`private_key`; download a new key"
            ) from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ConfigError("gmail `service_account_json` holds no RSA private key")
        self._key = key
        self.token_uri = token_uri or str(info.get("token_uri") or DEFAULT_TOKEN_URI)
        self._lock = threading.Lock()
        self._tokens: dict[str, tuple[str, float]] = {}

    def assertion(self, user: str, now: float) -> str:
        """A signed JWT asking for a read-only Gmail token acting as ``user``."""
        header = {"alg": "RS256", "typ": "JWT"}
        claims: dict[str, str | int] = {"iss": self.email, "sub": user, "scope": SCOPE}
        claims |= {"aud": self.token_uri, "iat": int(now), "exp": int(now) + 3600}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64(signature)}"

    def token(self, user: str, client: httpx.Client, policy: RetryPolicy) -> str:
        """A current access token for ``user``."""
        with self._lock:
            now = time.time()
            cached = self._tokens.get(user)
            if cached is None or now > cached[1] - 60:
                token, lifetime = self._exchange(user, client, policy, now)
                cached = (token, now + lifetime)
                self._tokens[user] = cached
            return cached[0]

    def _exchange(
        self, user: str, client: httpx.Client, policy: RetryPolicy, now: float
    ) -> tuple[str, int]:
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
            "assertion": self.assertion(user, now),
        }

        def attempt() -> httpx.Response:
            try:
                response = client.post(self.token_uri, data=form)
            except httpx.HTTPError as exc:
                raise TransientError(describe_network_error(exc, self.token_uri)) from exc
            if response.status_code == 429 or response.status_code >= 500:
                raise TransientError(f"gmail token endpoint returned HTTP {response.status_code}")
            return response

        response = call_with_retry(attempt, policy)
        try:
            body: Any = response.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if response.status_code == 200 and "access_token" in body:
            return str(body["access_token"]), int(body.get("expires_in", 3600))
        error, said = str(body.get("error", "")), str(body.get("error_description", ""))
        if error == "invalid_grant":
            raise ConfigError(
                f"gmail `users`: {user!r} was refused as a delegated user ({said}); expected "
                "an existing user of the Workspace domain; fix `users`"
            )
        raise CredentialError(
            f"gmail service account {self.email} was refused acting as {user} (HTTP "
            f"{response.status_code} {error}: {said}); grant it domain-wide delegation for "
            f"the scope {SCOPE} in the Admin console (Security > API controls)"
        )
