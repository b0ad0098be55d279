"""Service-account access tokens for Cloud Storage: the OAuth 2.0 JWT bearer flow.

A service-account key (the JSON file Google issues) signs a JWT asserting its
``client_email`` and the read-only storage scope with RS256; the key's ``token_uri``
exchanges it for an access token that lives an hour
(https://developers.google.com/identity/protocols/oauth2/service-account#httprest).
Tokens are cached until a minute before they expire. A refused key is a
``CredentialError`` naming the key's account and the fix.
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

from headwater.connectors._bucket import send
from headwater.errors import ConfigError, CredentialError
from headwater.retry import RetryPolicy

READ_SCOPE = "https://www.googleapis.com/auth/devstorage.read_only"
DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class ServiceAccount:
    """One service-account key: signs assertions and keeps the current access token."""

    def __init__(self, key_json: str, *, where: str) -> None:
        try:
            info: Any = json.loads(key_json)
            email = str(info["client_email"])
            key = serialization.load_pem_private_key(info["private_key"].encode(), None)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"gcs source: {where} is not a service-account key ({type(exc).__name__}); "
                "expected the JSON key file with `client_email` and `private_key`; download "
                "a new key for the service account"
            ) from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ConfigError(f"gcs source: {where} holds no RSA private key; expected one")
        self.email = email
        self.token_uri = str(info.get("token_uri") or DEFAULT_TOKEN_URI)
        self._key = key
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires = 0.0

    def assertion(self, now: float) -> str:
        """A signed JWT asking ``token_uri`` for a read-only storage token."""
        header = {"alg": "RS256", "typ": "JWT"}
        claims = {
            "iss": self.email,
            "scope": READ_SCOPE,
            "aud": self.token_uri,
            "iat": int(now),
            "exp": int(now) + 3600,
        }
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64(signature)}"

    def token(self, client: httpx.Client, policy: RetryPolicy) -> str:
        """A current access token, fetched when there is none or it is about to expire."""
        with self._lock:
            now = time.time()
            if self._token is None or now > self._expires - 60:
                self._token, lifetime = self._exchange(client, policy, now)
                self._expires = now + lifetime
            return self._token

    def _exchange(self, client: httpx.Client, policy: RetryPolicy, now: float) -> tuple[str, int]:
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
            "assertion": self.assertion(now),
        }

        def request() -> httpx.Response:
            return client.post(self.token_uri, data=form)

        response = send("gcs token endpoint", request, self.token_uri, policy)
        try:
            body: Any = response.json()
        except ValueError:
            body = {}
        if response.status_code != 200 or not isinstance(body, dict) or "access_token" not in body:
            reason = body.get("error_description") or body.get("error") if body else ""
            raise CredentialError(
                f"gcs service account {self.email} was refused by {self.token_uri} "
                f"(HTTP {response.status_code}: {reason or response.text[:120]}); expected an "
                "active key of an existing service account; create a new key and set "
                "`service_account_json` or `service_account_file` again"
            )
        return str(body["access_token"]), int(body.get("expires_in", 3600))
