"""The S3 connector: list a bucket page by page, fetch an object only when it changed.

The listing alone carries each object's ETag, size and LastModified, so a read costs one
``ListObjectsV2`` request per 1,000 keys; the version hint ``etag:size`` lets the runner
skip unchanged objects without downloading them, and metadata comes from the listing
only, so it is the same on every run. The media type is guessed from the key; a new or
changed object whose key has no known extension gets one ``HeadObject`` for its
Content-Type. Bytes come later, through ``fetch``, and only if the runner asks. A
checkpoint after every page holds the last key listed; a killed run resumes with
``StartAfter``.
"""

from __future__ import annotations

import json
import logging
import mimetypes
from collections.abc import Iterator
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr

from headwater.clock import as_utc, iso
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.globs import KeyFilter
from headwater.errors import ConfigError, CredentialError, ItemError
from headwater.objectstore import call, make_client
from headwater.retry import RetryPolicy
from headwater.scopes import HIERARCHY_KEY
from headwater.types import (
    Checkpoint,
    Failure,
    KnownVersions,
    MetadataValue,
    SourceDocument,
    Stage,
    Window,
)

log = logging.getLogger(__name__)

_GENERIC_TYPES = {"binary/octet-stream", "application/octet-stream", ""}


class S3Options(ConnectorOptions):
    """The keys of an ``s3`` source."""

    bucket: str = Field(min_length=1)
    prefix: str = ""
    endpoint_url: str | None = None
    region: str | None = None
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    session_token: SecretStr | None = None
    addressing_style: Literal["auto", "path", "virtual"] = "auto"
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    max_object_bytes: int = Field(default=50 * 1024 * 1024, gt=0)
    page_size: int = Field(default=1000, ge=1, le=1000)


class S3Connector:
    """Reads the objects of one bucket (under an optional prefix)."""

    type_name: ClassVar[str] = "s3"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=False, full_listing=True
    )
    Options: ClassVar[type[S3Options]] = S3Options

    def __init__(self, options: S3Options, context: SourceContext) -> None:
        if (options.access_key_id is None) != (options.secret_access_key is None):
            raise ConfigError(
                "s3 source: only one of `access_key_id`/`secret_access_key` is set; "
                "expected both or neither; set the other one or remove both"
            )
        self.options = options
        self.context = context
        self._selected = KeyFilter(options.include, options.exclude)
        self._endpoint = options.endpoint_url or f"AWS ({options.region or 'default region'})"
        self._client = make_client(
            endpoint_url=options.endpoint_url,
            region=options.region,
            access_key_id=options.access_key_id,
            secret_access_key=options.secret_access_key,
            session_token=options.session_token,
            addressing_style=options.addressing_style,
            user_agent=context.user_agent,
        )

    def _call(self, method: str, key: str | None = None, attempts: int = 3, **kw: Any) -> Any:
        fn = getattr(self._client, method)
        return call(
            lambda: fn(Bucket=self.options.bucket, **kw),
            bucket=self.options.bucket,
            endpoint=self._endpoint,
            key=key,
            policy=RetryPolicy(attempts=attempts),
        )

    def validate(self) -> None:
        """List one key of the prefix once, without retries."""
        self._call("list_objects_v2", attempts=1, Prefix=self.options.prefix, MaxKeys=1)

    def _pages(self, start_after: str | None) -> Iterator[tuple[list[dict[str, Any]], str]]:
        """Pages of selected listing entries in key order, each with the last key listed."""
        token: str | None = None
        while True:
            kw: dict[str, Any] = {"Prefix": self.options.prefix, "MaxKeys": self.options.page_size}
            if token:
                kw["ContinuationToken"] = token
            elif start_after:
                kw["StartAfter"] = start_after
            page = self._call("list_objects_v2", **kw)
            contents = page.get("Contents", [])
            if contents:
                yield [e for e in contents if self.in_scope(e["Key"])], contents[-1]["Key"]
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return

    def in_scope(self, object_id: str) -> bool:
        """Whether the config selects this key: under ``prefix``, not a folder marker, and
        matched by the include/exclude globs, which are relative to the prefix."""
        prefix = self.options.prefix
        if not object_id.startswith(prefix) or object_id.endswith("/"):
            return False
        relative = object_id[len(prefix) :]
        if not prefix.endswith("/"):  # prefix "published" is "published/" for the globs
            relative = relative.removeprefix("/")
        return self._selected(relative)

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield every object under the prefix (fetched only when changed), page by page."""
        for entries, last_key in self._pages(_resume_key(checkpoint)):
            for entry in entries:
                item = self._item(entry, known)
                if item is not None:
                    yield item
            yield Checkpoint(json.dumps({"v": 1, "after": last_key}))
        return Checkpoint(json.dumps({"v": 1, "complete": True}))

    def _item(self, entry: dict[str, Any], known: KnownVersions) -> SourceDocument | Failure | None:
        key: str = entry["Key"]
        size = int(entry.get("Size", 0))
        locator = f"s3://{self.options.bucket}/{key}"
        if size > self.options.max_object_bytes:
            return Failure(
                object_id=key,
                locator=locator,
                stage=Stage.FETCH.value,
                error_class="too_large",
                message=f"{size} bytes is over max_object_bytes={self.options.max_object_bytes}; "
                "raise `max_object_bytes` or exclude the key",
                permanent=True,
            )
        etag = str(entry.get("ETag", "")).strip('"')
        version = f"{etag}:{size}"
        modified: datetime | None = (
            as_utc(entry["LastModified"]) if "LastModified" in entry else None
        )
        metadata: dict[str, MetadataValue] = {"etag": etag, "size": str(size), HIERARCHY_KEY: key}
        if modified is not None:
            metadata["last_modified"] = iso(modified) or ""
        media_type = mimetypes.guess_type(key)[0]
        if media_type is None and known(key) != version:
            try:
                head = self._call("head_object", key=key, Key=key)
            except ItemError:
                return None  # deleted since it was listed: it is not there any more
            except CredentialError as exc:
                return Failure(key, locator, Stage.FETCH.value, "access_denied", str(exc), False)
            content_type = str(head.get("ContentType") or "").split(";")[0].strip()
            media_type = None if content_type in _GENERIC_TYPES else content_type
        return SourceDocument(
            object_id=key,
            locator=locator,
            title="",  # the parser finds the title; else the core uses the key
            version=version,
            fetch_ref=key,
            media_type=media_type,
            updated_at=modified,
            metadata=metadata,
        )

    def fetch(self, ref: str) -> bytes:
        """The object's bytes; ItemError when it vanished, is denied or is over the limit."""
        limit = self.options.max_object_bytes
        try:
            response = self._call("get_object", key=ref, Key=ref)
        except CredentialError as exc:  # one object's ACL: a failure record, not a failed run
            raise ItemError("access_denied", str(exc), permanent=False) from exc
        body = response["Body"]
        try:
            data: bytes = body.read(limit + 1)
        finally:
            body.close()
        if len(data) > limit:
            raise ItemError("too_large", f"s3 object {ref!r} is over max_object_bytes={limit}")
        return data

    def enumerate(self) -> Iterator[str]:
        """Every selected key under the prefix; raises if the listing cannot finish."""
        for entries, _ in self._pages(None):
            for entry in entries:
                yield entry["Key"]


def _resume_key(checkpoint: Checkpoint | None) -> str | None:
    """The key to list after: set mid-run, None for a fresh run (a full listing)."""
    if checkpoint is None:
        return None
    try:
        cursor = json.loads(checkpoint.cursor)
    except ValueError:
        log.warning("s3: ignoring an unreadable checkpoint; listing from the start")
        return None
    after = cursor.get("after") if isinstance(cursor, dict) else None
    return after if isinstance(after, str) else None
