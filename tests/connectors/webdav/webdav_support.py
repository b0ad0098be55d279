"""A real WsgiDAV server for the webdav tests, and a count of the requests it logged."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from headwater.connectors.base import SourceContext
from headwater.connectors.webdav import WebdavConnector, WebdavOptions

USER, PASSWORD = "ann", "dav-pass"


@dataclass
class DavServer:
    url: str
    root: Path
    log: Path

    def count(self, method: str, under: str = "/") -> int:
        """Requests of ``method`` below ``under`` that WsgiDAV logged so far."""
        pattern = re.compile(rf'"{method} ({re.escape(under)}[^"]*)"')
        return len(pattern.findall(self.log.read_text()))


def make_connector(
    url: str, tmp_path: Path, *, password: str = PASSWORD, **options: object
) -> WebdavConnector:
    opts = WebdavOptions(
        url=url,
        username=USER,
        password=SecretStr(password),
        **options,  # type: ignore[arg-type]
    )
    return WebdavConnector(opts, SourceContext(source_id="dav", state_dir=tmp_path))
