"""The Azure Blob connector: the Blob service REST API over httpx, listing first.

List Blobs (https://learn.microsoft.com/rest/api/storageservices/list-blobs) gives each
blob's name, ETag, Last-Modified, size and Content-Type page by page (``NextMarker``), so
a read costs one request per page; the ETag (new on every write of the blob) is the
version hint, and a blob is downloaded (Get Blob) only when the runner asks. The
azure-storage-blob SDK is not used: it brings azure-core and requests, a second HTTP
stack with its own retry policy, for three kinds of GET that Shared Key signs in a page.
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime
from typing import Any, ClassVar
from urllib.parse import quote, unquote
from xml.etree.ElementTree import Element

import httpx
from defusedxml.ElementTree import fromstring
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
from headwater.connectors.azure_blob._auth import resolve
from headwater.connectors.base import SourceContext
from headwater.errors import ConfigError, CredentialError, FatalError, ItemError
from headwater.retry import RetryPolicy
from headwater.types import MetadataValue

# A wrong key or a forged or expired SAS: AuthenticationFailed on Azure, AuthorizationFailure
# on Azurite (and on Azure when a firewall rule refuses the caller).
_AUTH_CODES = frozenset(
    {
        "AuthenticationFailed",
        "AuthorizationFailure",
        "InvalidAuthenticationInfo",
        "NoAuthenticationInformation",
    }
)


class AzureBlobOptions(BucketOptions):
    """The keys of an ``azure_blob`` source."""

    container: str = Field(min_length=1)
    connection_string: SecretStr | None = None
    account_url: str | None = None
    account_name: str | None = None
    account_key: SecretStr | None = None
    sas_token: SecretStr | None = None
    page_size: int = Field(default=1000, ge=1, le=5000)


class AzureBlobConnector(BucketConnector):
    """Reads the blobs of one container (under an optional prefix)."""

    type_name: ClassVar[str] = "azure_blob"
    Options: ClassVar[type[AzureBlobOptions]] = AzureBlobOptions

    def __init__(self, options: AzureBlobOptions, context: SourceContext) -> None:
        super().__init__(options)
        self.options = options
        self.context = context
        self._auth = resolve(
            connection_string=options.connection_string,
            account_url=options.account_url,
            account_name=options.account_name,
            account_key=options.account_key,
            sas_token=options.sas_token,
        )
        self._container_url = f"{self._auth.endpoint}/{quote(options.container, safe='')}"
        self._policy = options.retry_policy()
        self._client = httpx.Client(
            headers={"User-Agent": context.user_agent}, timeout=options.timeout
        )

    def __str__(self) -> str:
        return f"azure_blob container {self.options.container!r}"

    def _send(
        self, what: str, url: str, params: dict[str, str], policy: RetryPolicy
    ) -> httpx.Response:
        def request() -> httpx.Response:
            built = self._client.build_request("GET", url, params=params)
            return self._client.send(self._auth.authorize(built), stream=True)

        return send(what, request, url, policy)

    def _list(self, marker: str | None, page_size: int, policy: RetryPolicy) -> bytes:
        params = {"restype": "container", "comp": "list", "maxresults": str(page_size)}
        params["include"] = "metadata"  # to tell Data Lake directories (hdi_isfolder) apart
        if self.options.prefix:
            params["prefix"] = self.options.prefix
        if marker:
            params["marker"] = marker
        what = (
            f"azure_blob List Blobs of container {self.options.container!r} "
            f"at {self._auth.endpoint}"
        )
        response = self._send(what, self._container_url, params, policy)
        try:
            body = response.read()
        finally:
            response.close()
        if response.status_code == 400 and marker:
            raise CursorRefused(marker)
        if response.status_code != 200:
            raise self._listing_error(response.status_code, _error_code(response, body))
        return body

    def _listing_error(self, status: int, code: str) -> Exception:
        container, where = self.options.container, self._auth.endpoint
        how = "`account_key`" if self._auth.key is not None else "`sas_token`"
        if status in (401, 403) and code in _AUTH_CODES:
            return CredentialError(
                f"azure_blob account {self._auth.account!r} at {where} refused the request's "
                f"credentials (HTTP {status} {code}); expected a current key or an unexpired "
                f"SAS token of this account (and a network rule that admits this host); fix "
                f"{how} or `connection_string`"
            )
        if status == 403:
            return CredentialError(
                f"azure_blob container {container!r} at {where}: access denied (HTTP 403 "
                f"{code}); expected read and list permissions (SAS sp=rl with srt=co, or the "
                "Storage Blob Data Reader role); grant them"
            )
        if status == 404:
            return ConfigError(
                f"azure_blob source: no such container {container!r} in account "
                f"{self._auth.account!r} at {where} (HTTP 404 {code}); fix `container`"
            )
        return FatalError(
            f"azure_blob List Blobs of container {container!r} at {where} returned HTTP "
            f"{status} ({code}); expected 200"
        )

    def validate(self) -> None:
        policy = self._policy
        self._list(None, 1, RetryPolicy(1, policy.initial_wait, policy.max_wait, policy.jitter))

    def _page(self, token: str | None) -> tuple[list[Listed], str | None]:
        root: Element = _xml(self._list(token, self.options.page_size, self._policy))
        blobs = root.iterfind("Blobs/Blob")
        entries = [_listed(blob) for blob in blobs if not _is_directory(blob)]
        return entries, (root.findtext("NextMarker") or None)

    def _locator(self, key: str) -> str:
        return f"{self._container_url}/{quote(key)}"

    def _download(self, key: str, limit: int) -> bytes:
        url = f"{self._container_url}/{quote(key)}"
        response = self._send(f"azure_blob blob {key!r}", url, {}, self._policy)
        try:
            status = response.status_code
            if status == 200:
                return read_capped(response, limit)
            code = _error_code(response, response.read())
        finally:
            response.close()
        if status == 404:
            raise ItemError("not_found", f"azure_blob blob {key!r} is gone (HTTP 404 {code})")
        if status in (401, 403):
            raise ItemError(
                "access_denied",
                f"azure_blob blob {key!r}: access denied (HTTP {status} {code}); expected "
                "read permission on the container",
                permanent=False,
            )
        raise ItemError(
            f"http_{status}", f"azure_blob blob {key!r} returned HTTP {status} ({code})"
        )


def _xml(body: bytes) -> Element:
    """The root element of an XML answer, parsed without DTDs or entities."""
    root: Any = fromstring(body)
    return root  # type: ignore[no-any-return]


def _is_directory(blob: Element) -> bool:
    """A directory of a hierarchical-namespace (Data Lake Gen2) account: no content."""
    return (blob.findtext("Metadata/hdi_isfolder") or "").lower() == "true"


def _listed(blob: Element) -> Listed:
    """A List Blobs ``<Blob>`` element."""
    element = blob.find("Name")
    name = (element.text if element is not None else None) or ""
    if element is not None and element.get("Encoded") == "true":
        name = unquote(name)  # a name with characters XML cannot carry comes percent-encoded
    props = blob.find("Properties")

    def text(tag: str) -> str:
        return (props.findtext(tag) if props is not None else None) or ""

    etag = text("Etag").strip('"')
    size = int(text("Content-Length") or 0)
    stamp = text("Last-Modified")
    modified = as_utc(parsedate_to_datetime(stamp)) if stamp else None
    metadata: dict[str, MetadataValue] = {"etag": etag, "size": str(size)}
    if modified is not None:
        metadata["last_modified"] = iso(modified) or ""
    return Listed(
        key=name,
        size=size,
        version=etag,
        modified=modified,
        content_type=text("Content-Type"),
        metadata=metadata,
    )


def _error_code(response: httpx.Response, body: bytes) -> str:
    """The storage error code: the ``x-ms-error-code`` header, else the XML ``<Code>``."""
    code = str(response.headers.get("x-ms-error-code") or "")
    if code:
        return code
    try:
        return _xml(body).findtext("Code") or ""
    except Exception:  # not XML: the start of the body says more than nothing
        return body[:80].decode("utf-8", "replace")
