"""The GCS connector: the Cloud Storage JSON API over httpx, listing first, bytes on demand.

``objects.list`` (https://cloud.google.com/storage/docs/json_api/v1/objects/list) gives
each object's name, size, ``generation`` and ``updated`` page by page, so a read costs
one request per page: ``generation`` (a number Cloud Storage raises on every write of
the object) is the version hint and the sequence, and an object is downloaded
(``objects.get?alt=media``) only when the runner asks. Auth is a service-account key
(``_auth``) or, for an emulator, none. The google-cloud-storage client is not used: it
brings google-api-core, protobuf and google-resumable-media for three GET requests.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

import httpx
from pydantic import Field, SecretStr

from headwater.clock import as_utc, iso
from headwater.connectors._bucket import (
    BucketConnector,
    BucketOptions,
    CursorRefused,
    Listed,
    read_capped,
    send,
)
from headwater.connectors.base import SourceContext
from headwater.connectors.gcs._auth import READ_SCOPE, ServiceAccount
from headwater.errors import ConfigError, CredentialError, FatalError, ItemError
from headwater.types import MetadataValue

DEFAULT_ENDPOINT = "https://storage.googleapis.com"
_FIELDS = "items(name,size,generation,updated,contentType,md5Hash),nextPageToken"


class GcsOptions(BucketOptions):
    """The keys of a ``gcs`` source."""

    bucket: str = Field(min_length=1)
    endpoint_url: str = DEFAULT_ENDPOINT
    service_account_json: SecretStr | None = None
    service_account_file: str | None = None
    anonymous: bool = False


class GcsConnector(BucketConnector):
    """Reads the objects of one bucket (under an optional prefix)."""

    type_name: ClassVar[str] = "gcs"
    Options: ClassVar[type[GcsOptions]] = GcsOptions

    def __init__(self, options: GcsOptions, context: SourceContext) -> None:
        super().__init__(options)
        self.options = options
        self.context = context
        self._account = _service_account(options, context)
        self._base = options.endpoint_url.rstrip("/")
        self._bucket_url = f"{self._base}/storage/v1/b/{quote(options.bucket, safe='')}/o"
        self._policy = options.retry_policy()
        self._client = httpx.Client(
            headers={"User-Agent": context.user_agent}, timeout=options.timeout
        )

    def __str__(self) -> str:
        return f"gcs bucket {self.options.bucket!r}"

    def _headers(self) -> dict[str, str]:
        if self._account is None:
            return {}
        return {"Authorization": f"Bearer {self._account.token(self._client, self._policy)}"}

    def _list(self, token: str | None, page_size: int, attempts: int | None = None) -> Any:
        params: dict[str, str | int] = {
            "maxResults": page_size,
            "projection": "noAcl",
            "fields": _FIELDS,
        }
        if self.options.prefix:
            params["prefix"] = self.options.prefix
        if token:
            params["pageToken"] = token
        policy = self._policy
        if attempts is not None:
            policy = type(policy)(attempts, policy.initial_wait, policy.max_wait, policy.jitter)
        response = send(
            f"gcs objects.list of bucket {self.options.bucket!r} at {self._base}",
            lambda: self._client.get(self._bucket_url, params=params, headers=self._headers()),
            self._bucket_url,
            policy,
        )
        if response.status_code == 400 and token:
            raise CursorRefused(token)
        if response.status_code != 200:
            raise self._listing_error(response)
        return response.json()

    def _listing_error(self, response: httpx.Response) -> Exception:
        status, message = response.status_code, _error_message(response)
        bucket, where = self.options.bucket, self._base
        if status == 401:
            return CredentialError(
                f"gcs bucket {bucket!r} at {where}: credentials refused (HTTP 401: {message}); "
                "expected a valid service-account key; fix `service_account_json` or "
                "`service_account_file`"
            )
        if status == 403:
            who = self._account.email if self._account else "anonymous access"
            return CredentialError(
                f"gcs bucket {bucket!r} at {where}: access denied to {who} (HTTP 403: "
                f"{message}); expected storage.objects.list and storage.objects.get (the "
                "Storage Object Viewer role) on the bucket; grant them"
            )
        if status == 404:
            return ConfigError(
                f"gcs source: no such bucket {bucket!r} at {where} (HTTP 404); "
                "fix `bucket` or `endpoint_url`"
            )
        return FatalError(
            f"gcs objects.list of bucket {bucket!r} at {where} returned HTTP {status} "
            f"({message}); expected 200"
        )

    def validate(self) -> None:
        self._list(None, 1, attempts=1)

    def _page(self, token: str | None) -> tuple[list[Listed], str | None]:
        body = self._list(token, self.options.page_size)
        entries = [_listed(item) for item in body.get("items", [])]
        return entries, body.get("nextPageToken") or None

    def _locator(self, key: str) -> str:
        return f"gs://{self.options.bucket}/{key}"

    def _download(self, key: str, limit: int) -> bytes:
        url = f"{self._bucket_url}/{quote(key, safe='')}"
        request = self._client.build_request(
            "GET", url, params={"alt": "media"}, headers=self._headers()
        )
        response = send(
            f"gcs object {key!r}",
            lambda: self._client.send(request, stream=True),
            url,
            self._policy,
        )
        try:
            status = response.status_code
            if status == 200:
                return read_capped(response, limit)
            response.read()
            message = _error_message(response)
        finally:
            response.close()
        if status == 404:
            raise ItemError("not_found", f"gcs object {key!r} is gone (HTTP 404)")
        if status in (401, 403):
            raise ItemError(
                "access_denied",
                f"gcs object {key!r}: access denied (HTTP {status}: {message}); "
                "expected storage.objects.get on the bucket",
                permanent=False,
            )
        raise ItemError(f"http_{status}", f"gcs object {key!r} returned HTTP {status} ({message})")


def _listed(item: dict[str, Any]) -> Listed:
    """A listing entry of objects.list."""
    generation = str(item.get("generation", ""))
    size = int(item.get("size", 0))
    updated = item.get("updated")
    modified = as_utc(datetime.fromisoformat(str(updated))) if updated else None
    metadata: dict[str, MetadataValue] = {"generation": generation, "size": str(size)}
    if modified is not None:
        metadata["last_modified"] = iso(modified) or ""
    return Listed(
        key=str(item["name"]),
        size=size,
        version=generation,
        modified=modified,
        content_type=str(item.get("contentType", "")),
        sequence=int(generation) if generation.isdigit() else None,
        metadata=metadata,
    )


def _error_message(response: httpx.Response) -> str:
    """The ``error.message`` of a JSON API error body, else the start of the body."""
    try:
        error = response.json().get("error", {})
        return str(error.get("message", "")) if isinstance(error, dict) else str(error)
    except (ValueError, AttributeError):
        return response.text[:120]


def _service_account(options: GcsOptions, context: SourceContext) -> ServiceAccount | None:
    """The configured key, or None for anonymous access; a ConfigError for anything else."""
    given = [options.service_account_json is not None, options.service_account_file is not None]
    if sum(given) + options.anonymous != 1:
        raise ConfigError(
            "gcs source: set exactly one of `service_account_json`, `service_account_file` "
            "or `anonymous = true` (an emulator); expected one way to authenticate with the "
            f"scope {READ_SCOPE}"
        )
    if options.service_account_json is not None:
        return ServiceAccount(
            options.service_account_json.get_secret_value(), where="`service_account_json`"
        )
    if options.service_account_file is not None:
        path = Path(options.service_account_file).expanduser()
        if not path.is_absolute() and context.config_root is not None:
            path = context.config_root / path
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"gcs source: `service_account_file` {str(path)!r} cannot be read "
                f"({exc.strerror}); expected the service account's JSON key file"
            ) from None
        return ServiceAccount(text, where=f"`service_account_file` {str(path)!r}")
    return None
