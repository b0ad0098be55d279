"""Azure Storage credentials: a connection string, an account key or a SAS token.

``resolve`` turns the options into a blob endpoint, an account name and one way to
authenticate. An account key signs each request with Shared Key
(https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key): an
HMAC-SHA256 over the verb, the standard headers, the ``x-ms-*`` headers and the
canonicalized resource (``/account/path`` plus the sorted query parameters). A SAS token
is appended to every request's query instead.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from dataclasses import dataclass
from email.utils import formatdate
from urllib.parse import parse_qsl, urlsplit

import httpx
from pydantic import SecretStr

from headwater.errors import ConfigError

API_VERSION = "2021-12-02"
# Azurite's documented development account (UseDevelopmentStorage=true).
DEV_ACCOUNT = "devstoreaccount1"
DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
_SIGNED_HEADERS = (
    "content-encoding",
    "content-language",
    "content-length",
    "content-md5",
    "content-type",
    "date",
    "if-modified-since",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "range",
)


@dataclass(frozen=True)
class Credentials:
    """Where the account's blob service is and how requests are authorized."""

    endpoint: str
    account: str
    key: bytes | None = None
    sas: tuple[tuple[str, str], ...] = ()

    def authorize(self, request: httpx.Request) -> httpx.Request:
        """The request with its SAS parameters or its Shared Key signature added."""
        request.headers["x-ms-version"] = API_VERSION
        request.headers["x-ms-date"] = formatdate(usegmt=True)
        if self.sas:
            request.url = request.url.copy_merge_params(dict(self.sas))
        if self.key is not None:
            digest = hmac.new(self.key, string_to_sign(request, self.account).encode(), "sha256")
            signature = base64.b64encode(digest.digest()).decode()
            request.headers["Authorization"] = f"SharedKey {self.account}:{signature}"
        return request


def string_to_sign(request: httpx.Request, account: str) -> str:
    """The Shared Key string to sign for ``request`` (service version 2015-02-21 on)."""
    values = []
    for name in _SIGNED_HEADERS:
        value = request.headers.get(name, "")
        values.append("" if name == "content-length" and value == "0" else value)
    ms = sorted(
        (k.lower(), v.strip()) for k, v in request.headers.items() if k.lower().startswith("x-ms-")
    )
    headers = "".join(f"{k}:{v}\n" for k, v in ms)
    path = request.url.raw_path.split(b"?")[0].decode("ascii")
    resource = f"/{account}{path}"
    params: dict[str, list[str]] = {}
    for key, value in request.url.params.multi_items():
        params.setdefault(key.lower(), []).append(value)
    for key in sorted(params):
        resource += f"\n{key}:{','.join(sorted(params[key]))}"
    return "\n".join([request.method, *values]) + "\n" + headers + resource


def _connection_string(text: str) -> dict[str, str]:
    parts = dict(part.split("=", 1) for part in text.strip().strip(";").split(";") if "=" in part)
    if parts.get("UseDevelopmentStorage", "").lower() == "true":
        return {
            "AccountName": DEV_ACCOUNT,
            "AccountKey": DEV_KEY,
            "BlobEndpoint": f"http://127.0.0.1:10000/{DEV_ACCOUNT}",
        }
    return parts


def _account_from_url(url: str) -> str | None:
    """``acct`` of https://acct.blob.core.windows.net, or the first path segment of an
    emulator's path-style URL (http://127.0.0.1:10000/devstoreaccount1)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ".blob." in host:
        return host.split(".", 1)[0]
    first = parts.path.strip("/").split("/", 1)[0]
    return first or None


def _key(value: str, where: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(
            f"azure_blob source: {where} is not a base64 account key; expected the key "
            "shown under the storage account's Access keys; copy it again"
        ) from None


def _sas(token: str) -> tuple[tuple[str, str], ...]:
    pairs = tuple(parse_qsl(token.strip().lstrip("?"), keep_blank_values=True))
    if not any(k == "sig" for k, _ in pairs):
        raise ConfigError(
            "azure_blob source: `sas_token` has no `sig` parameter; expected a SAS token "
            "such as sv=…&ss=b&srt=co&sp=rl&se=…&sig=…; generate one with read and list "
            "permissions"
        )
    return pairs


def resolve(
    *,
    connection_string: SecretStr | None,
    account_url: str | None,
    account_name: str | None,
    account_key: SecretStr | None,
    sas_token: SecretStr | None,
) -> Credentials:
    """The credentials the options describe; ConfigError naming the keys to fix."""
    if (connection_string is None) == (account_url is None):
        raise ConfigError(
            "azure_blob source: set exactly one of `connection_string` or `account_url`; "
            "expected a storage account connection string, or its blob URL with "
            "`account_key` or `sas_token`"
        )
    if connection_string is not None:
        parts = _connection_string(connection_string.get_secret_value())
        account = parts.get("AccountName") or account_name
        endpoint = parts.get("BlobEndpoint")
        if endpoint is None and account:
            scheme = parts.get("DefaultEndpointsProtocol", "https")
            suffix = parts.get("EndpointSuffix", "core.windows.net")
            endpoint = f"{scheme}://{account}.blob.{suffix}"
        if endpoint is None or not (account or endpoint):
            raise ConfigError(
                "azure_blob source: `connection_string` names no account; expected "
                "AccountName=…;AccountKey=… or BlobEndpoint=…;SharedAccessSignature=…"
            )
        account = account or _account_from_url(endpoint) or ""
        if "AccountKey" in parts:
            key = _key(parts["AccountKey"], "the connection string's AccountKey")
            return Credentials(endpoint.rstrip("/"), account, key=key)
        if "SharedAccessSignature" in parts:
            return Credentials(
                endpoint.rstrip("/"), account, sas=_sas(parts["SharedAccessSignature"])
            )
        raise ConfigError(
            "azure_blob source: `connection_string` has neither AccountKey nor "
            "SharedAccessSignature; expected one of them"
        )
    assert account_url is not None
    account = account_name or _account_from_url(account_url)
    if account is None:
        raise ConfigError(
            f"azure_blob source: cannot tell the account from `account_url` {account_url!r}; "
            "set `account_name`"
        )
    if (account_key is None) == (sas_token is None):
        raise ConfigError(
            "azure_blob source: with `account_url`, set exactly one of `account_key` or `sas_token`"
        )
    if account_key is not None:
        key = _key(account_key.get_secret_value(), "`account_key`")
        return Credentials(account_url.rstrip("/"), account, key=key)
    assert sas_token is not None
    return Credentials(account_url.rstrip("/"), account, sas=_sas(sas_token.get_secret_value()))
