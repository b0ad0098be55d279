"""The content store on S3-compatible object storage: hosts that share no disk share it.

``[content] url = "s3://bucket/prefix"`` puts every object at
``prefix/{checksum[:2]}/{checksum}.zst`` in the bucket, so workers on several hosts (each
with its own ``state_dir``) read what any of them stored. An S3 PUT is atomic (a reader
sees the whole object or none), so there are no temp objects. A put of content already
stored copies the object onto itself (``MetadataDirective=REPLACE``), which renews its
LastModified: the garbage walk reads an object's age from it, as it reads a file's mtime.
Every call goes through ``headwater.objectstore.call``: one retry policy, classified
errors whose messages name the ``[content]`` keys to fix. boto3 is imported only when a
store is opened, so a workspace without ``[content] url`` never loads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr

from headwater.clock import iso, utcnow
from headwater.errors import ConfigError, ItemError
from headwater.manifest.content import SUFFIX, Codec, StoredObject, missing

CONTENT_KEYS = "[content] `url` (s3://BUCKET/PREFIX) or `endpoint_url`"


@dataclass(frozen=True)
class S3Location:
    """Where an ``s3://bucket/prefix`` url points: the bucket and a key prefix ending in /."""

    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> S3Location:
        """Split ``s3://bucket/some/prefix``; anything else is a ``ConfigError``."""
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
            raise ConfigError(
                f"[content] url = {url!r} is not an object-storage url; expected "
                "s3://BUCKET or s3://BUCKET/PREFIX; fix it, or remove `url` to keep the "
                "content store in state_dir/content"
            )
        prefix = parts.path.strip("/")
        return cls(parts.netloc, f"{prefix}/" if prefix else "")


class S3ContentStore:
    """The content store in an S3 bucket (under a key prefix)."""

    def __init__(
        self,
        url: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_id: SecretStr | None = None,
        secret_access_key: SecretStr | None = None,
        session_token: SecretStr | None = None,
        addressing_style: str = "auto",
    ) -> None:
        self.where = S3Location.parse(url)
        self.url = url
        self.endpoint = endpoint_url or "the AWS endpoint"
        from headwater.objectstore import make_client  # boto3 only where S3 is configured

        self._client: Any = make_client(
            endpoint_url=endpoint_url,
            region=region,
            access_key_id=access_key_id,
            secret_access_key=secret_access_key,
            session_token=session_token,
            addressing_style=addressing_style,
            user_agent="headwater-content",
        )
        self._codec = Codec()

    @property
    def location(self) -> str:
        """The ``s3://`` url (no credentials are ever part of it)."""
        return self.url

    def key(self, checksum: str) -> str:
        """The object key that holds ``checksum``'s text."""
        return f"{self.where.prefix}{checksum[:2]}/{checksum}{SUFFIX}"

    def _call(self, fn: Any, key: str | None = None) -> Any:
        from headwater.objectstore import call

        return call(
            fn, bucket=self.where.bucket, endpoint=self.endpoint, key=key, settings=CONTENT_KEYS
        )

    def _head(self, key: str) -> dict[str, Any] | None:
        """The object's metadata, None when there is no such object."""
        try:
            head: dict[str, Any] = self._call(
                lambda: self._client.head_object(Bucket=self.where.bucket, Key=key), key
            )
        except ItemError as exc:
            if exc.error_class == "not_found":
                return None
            raise
        return head

    def put(self, checksum: str, text: str) -> None:
        """PUT the compressed text; an object already there is renewed in place."""
        key, bucket = self.key(checksum), self.where.bucket
        if self._head(key) is not None:
            try:
                self._call(
                    lambda: self._client.copy_object(
                        Bucket=bucket,
                        Key=key,
                        CopySource={"Bucket": bucket, "Key": key},
                        MetadataDirective="REPLACE",
                        Metadata={"renewed-at": iso(utcnow())},
                    ),
                    key,
                )
                return
            except ItemError as exc:
                if exc.error_class != "not_found":
                    raise  # collected between the check and the copy: write it anew
        body = self._codec.pack(text)
        self._call(lambda: self._client.put_object(Bucket=bucket, Key=key, Body=body), key)

    def get(self, checksum: str) -> str:
        """GET and decompress one object."""
        key = self.key(checksum)
        try:
            answer = self._call(
                lambda: self._client.get_object(Bucket=self.where.bucket, Key=key), key
            )
        except ItemError as exc:
            if exc.error_class == "not_found":
                raise missing(checksum, self.location) from exc
            raise
        return self._codec.unpack(answer["Body"].read())

    def prefixes(self) -> list[str]:
        """The two-character prefixes under the store's key prefix, sorted."""
        found: set[str] = set()
        for page in self._pages(Prefix=self.where.prefix, Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                name = str(common["Prefix"])[len(self.where.prefix) :].rstrip("/")
                if len(name) == 2:
                    found.add(name)
        return sorted(found)

    def objects(self, prefix: str) -> Iterator[StoredObject]:
        """Every object directly under one prefix, with its size and LastModified."""
        base = f"{self.where.prefix}{prefix}/"
        for page in self._pages(Prefix=base, Delimiter="/"):
            for item in page.get("Contents", []):
                name = str(item["Key"])[len(base) :]
                yield StoredObject(name, int(item["Size"]), item["LastModified"].timestamp())

    def stat(self, prefix: str, name: str) -> StoredObject | None:
        """HEAD one object."""
        head = self._head(f"{self.where.prefix}{prefix}/{name}")
        if head is None:
            return None
        return StoredObject(name, int(head["ContentLength"]), head["LastModified"].timestamp())

    def remove(self, prefix: str, name: str) -> bool:
        """DELETE one object (S3 answers alike whether it was there or not)."""
        key = f"{self.where.prefix}{prefix}/{name}"
        self._call(lambda: self._client.delete_object(Bucket=self.where.bucket, Key=key), key)
        return True

    def check(self) -> None:
        """Fail early, naming the fix, when the bucket cannot be reached or listed."""
        self._call(lambda: self._client.head_bucket(Bucket=self.where.bucket))

    def _pages(self, **params: str) -> Iterator[dict[str, Any]]:
        token: str | None = None
        while True:
            ask = {"Bucket": self.where.bucket, **params}
            if token:
                ask["ContinuationToken"] = token
            page: dict[str, Any] = self._call(partial(self._client.list_objects_v2, **ask))
            yield page
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
