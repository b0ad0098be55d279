"""A WsgiDAV middleware for the tests: PROPFIND on a collection whose folder on disk holds
a ``.fail-propfind`` marker answers 500, so a listing can fail half-way for real; one
whose folder holds a ``.withhold-props.list`` file lists the members named in it (one per line)
with every propstat at 403, as a server does for members the user may not read (RFC 4918,
9.1: a 207 whose propstat carries another status)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

from wsgidav.mw.base_mw import BaseMiddleware

MARKER = ".fail-propfind"
WITHHOLD = ".withhold-props.list"
DAV = "{DAV:}"


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
        withhold = self.root / path / WITHHOLD
        if environ.get("REQUEST_METHOD") == "PROPFIND" and withhold.exists():
            return self._withheld(environ, start_response, set(withhold.read_text().split()))
        return self.next_app(environ, start_response)  # type: ignore[no-any-return]

    def _withheld(
        self, environ: dict[str, Any], start_response: Callable[..., Any], names: set[str]
    ) -> Iterable[bytes]:
        answer: list[Any] = []
        body = b"".join(self.next_app(environ, lambda *args: answer.extend(args)))
        tree = ElementTree.fromstring(body)
        for response in tree.iter(f"{DAV}response"):
            href = unquote(response.findtext(f"{DAV}href") or "").rstrip("/")
            if href.rsplit("/", 1)[-1] in names:
                for status in response.iter(f"{DAV}status"):
                    status.text = "HTTP/1.1 403 Forbidden"
        rewritten = ElementTree.tostring(tree, xml_declaration=True, encoding="utf-8")
        headers = [(k, v) for k, v in answer[1] if k.lower() != "content-length"]
        start_response(answer[0], [*headers, ("Content-Length", str(len(rewritten)))])
        return [rewritten]
