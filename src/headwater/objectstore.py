"""S3-compatible object storage through boto3: one client builder, one error classifier.

Shared by everything that talks S3: the ``s3`` connector (reads a bucket) and the
object-storage content store (``[content] url = "s3://..."``). botocore's own retries
are switched off so that the one retry helper (``headwater.retry``) decides; every call
goes through ``call``, which turns botocore exceptions into Headwater errors: connection
faults, throttling and 5xx are transient, 401/403 are credential errors, a missing
bucket is a config error. ``settings`` names the configuration keys a message tells the
user to fix (the connector's source keys by default).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
)
from pydantic import SecretStr

from headwater.errors import (
    ConfigError,
    CredentialError,
    FatalError,
    HeadwaterError,
    ItemError,
    TransientError,
)
from headwater.retry import DEFAULT_POLICY, RetryPolicy, call_with_retry

T = TypeVar("T")

_DENIED = {
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "AllAccessDisabled",
    "AccountProblem",
}
_THROTTLED = {
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "InternalError",
    "ServiceUnavailable",
}
_FIX_CREDENTIALS = (
    "fix `access_key_id`/`secret_access_key` (or the AWS credential chain) "
    "or grant s3:ListBucket and s3:GetObject"
)
SOURCE_KEYS = "`bucket` or `endpoint_url`"  # what a connector's user fixes for a bad bucket


def make_client(
    *,
    endpoint_url: str | None,
    region: str | None,
    access_key_id: SecretStr | None,
    secret_access_key: SecretStr | None,
    session_token: SecretStr | None,
    addressing_style: str,
    user_agent: str,
) -> Any:
    """An S3 client; explicit keys win, otherwise boto3's default credential chain."""
    session = boto3.session.Session(
        aws_access_key_id=access_key_id.get_secret_value() if access_key_id else None,
        aws_secret_access_key=secret_access_key.get_secret_value() if secret_access_key else None,
        aws_session_token=session_token.get_secret_value() if session_token else None,
        region_name=region,
    )
    config = Config(
        retries={"total_max_attempts": 1},
        connect_timeout=10,
        read_timeout=60,
        user_agent_extra=user_agent,
        s3={"addressing_style": addressing_style},
    )
    return session.client("s3", endpoint_url=endpoint_url, config=config)


def status_of(exc: ClientError) -> tuple[str, int]:
    """The S3 error code and HTTP status of a ClientError."""
    code = str(exc.response.get("Error", {}).get("Code", ""))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, status


def classify(
    exc: Exception,
    *,
    bucket: str,
    endpoint: str,
    key: str | None = None,
    settings: str = SOURCE_KEYS,
) -> HeadwaterError:
    """One Headwater error, with a one-line message naming the value and the fix."""
    where = f"s3 bucket {bucket!r} at {endpoint}"
    if isinstance(exc, EndpointConnectionError | ConnectionError):
        return TransientError(
            f"{where}: connection refused or unreachable ({type(exc).__name__}); expected an "
            "S3 server there; check `endpoint_url`/`region` or start the server"
        )
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return CredentialError(
            f"{where}: no AWS credentials found; expected `access_key_id` and "
            "`secret_access_key` or a configured AWS profile; set them"
        )
    if isinstance(exc, ClientError):
        code, status = status_of(exc)
        label = f"{status} {code}".strip()
        if status in (401, 403) or code in _DENIED:
            return CredentialError(f"{where}: access denied ({label}); {_FIX_CREDENTIALS}")
        if code == "NoSuchBucket" or (status == 404 and key is None):
            return ConfigError(
                f"{where}: no such bucket ({label}); expected an existing bucket; fix {settings}"
            )
        if code in ("NoSuchKey", "NotFound") or status == 404:
            return ItemError("not_found", f"s3 object {key!r} in {bucket!r} vanished ({label})")
        if status == 429 or status >= 500 or code in _THROTTLED:
            return TransientError(f"{where}: server busy or failing ({label}); retrying later")
        return FatalError(f"{where}: request failed ({label}): {exc}")
    if isinstance(exc, BotoCoreError):
        return TransientError(f"{where}: {type(exc).__name__}: {exc}")
    return FatalError(f"{where}: {type(exc).__name__}: {exc}")


def call(
    fn: Callable[[], T],
    *,
    bucket: str,
    endpoint: str,
    key: str | None = None,
    policy: RetryPolicy = DEFAULT_POLICY,
    settings: str = SOURCE_KEYS,
) -> T:
    """Run one S3 call with the shared retry policy and classified errors."""

    def attempt() -> T:
        try:
            return fn()
        except (BotoCoreError, ClientError) as exc:
            raise classify(
                exc, bucket=bucket, endpoint=endpoint, key=key, settings=settings
            ) from exc

    return call_with_retry(attempt, policy)
