"""Opening a Qdrant client and turning its failures into Headwater's error groups.

A refused connection, a timeout, HTTP 429 or 5xx is a ``TransientError`` (the core
retries it); a local folder held by another process is a ``FatalError`` naming the fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from qdrant_client import QdrantClient
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from headwater.errors import CredentialError, FatalError, TransientError

if TYPE_CHECKING:
    from headwater.sinks.qdrant._options import QdrantOptions


def open_client(options: QdrantOptions, path: Path | None, where: str) -> QdrantClient:
    """A client for the server at ``options.url``, the folder ``path``, or memory."""
    if options.url is not None:
        key = options.api_key.get_secret_value() if options.api_key else None
        return QdrantClient(
            url=options.url, api_key=key, timeout=int(options.timeout), check_compatibility=False
        )
    if path is None:
        return QdrantClient(location=":memory:", force_disable_check_same_thread=True)
    path.mkdir(parents=True, exist_ok=True)
    try:
        return QdrantClient(path=str(path), force_disable_check_same_thread=True)
    except RuntimeError as exc:  # qdrant's local mode locks its folder
        raise FatalError(
            f"the qdrant folder {where} is in use by another process ({exc}); "
            "stop the other Headwater process or use a Qdrant server (`url`)"
        ) from exc


@contextmanager
def guard(where: str) -> Iterator[None]:
    """Map client failures to TransientError / CredentialError / FatalError."""
    try:
        yield
    except UnexpectedResponse as exc:
        code = exc.status_code or 0
        if code in (401, 403):
            raise CredentialError(
                f"qdrant at {where} refused the request (HTTP {code}); check `api_key`"
            ) from exc
        if code == 429 or code >= 500:
            raise TransientError(f"qdrant at {where} answered HTTP {code}; retry later") from exc
        raise FatalError(f"qdrant at {where} answered HTTP {code}: {exc.content!r}") from exc
    except (ResponseHandlingException, httpx.TransportError) as exc:
        raise TransientError(
            f"qdrant at {where} could not be reached ({exc}); is the server running?"
        ) from exc
