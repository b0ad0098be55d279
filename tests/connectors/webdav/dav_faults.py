"""A WsgiDAV middleware for the tests: PROPFIND on a collection whose folder on disk holds
a ``.fail-propfind`` marker answers 500, so a listing can fail half-way for real."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from wsgidav.mw.base_mw import BaseMiddleware

MARKER = ".fail-propfind"


class FailingPropfind(BaseMiddleware):  # type: ignore[misc]
    def __init__(self, wsgidav_app: Any, next_app: Any, config: dict[str, Any]) -> None:
        super().__init__(wsgidav_app, next_app, config)
        self.root = Path(config["provider_mapping"]["/"])

    def is_disabled(self) -> bool:
        return False

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/").strip("/")
        if environ.get("REQUEST_METHOD") == "PROPFIND" and (self.root / path / MARKER).exists():
            start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
            return [b"injected listing failure\n"]
        return self.next_app(environ, start_response)  # type: ignore[no-any-return]
