"""Graph for Teams: the sharepoint connector's retried Graph client, with this API's
errors. A 401 names `token`; a 403 names the application permission the path needs
(https://learn.microsoft.com/en-us/graph/permissions-reference); a 404 names the team or
channel; other statuses come back as ``ItemError`` with the status (a 410 or 400 on a
delta link means "start over": the caller decides).
"""

from __future__ import annotations

from typing import Any

import httpx

from headwater.connectors.sharepoint._client import GraphClient, graph_error
from headwater.errors import CredentialError, ItemError

__all__ = ["GraphClient", "GraphError", "check", "permission_for"]


class GraphError(ItemError):
    """A Graph error other than credentials: its ``status`` and ``code``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(
            "not_found" if status == 404 else f"http_{status}", message, permanent=status == 404
        )
        self.status, self.code = status, code


def permission_for(url: str) -> str:
    """The application permission Graph requires to GET ``url``."""
    path = url.split("?", 1)[0]
    if "/messages" in path:
        return "ChannelMessage.Read.All"
    if path.endswith("/members"):
        return "ChannelMember.Read.All" if "/channels/" in path else "TeamMember.Read.All"
    if "/channels" in path:
        return "Channel.ReadBasic.All"
    return "Team.ReadBasic.All"


def check(response: httpx.Response, url: str) -> dict[str, Any]:
    """The JSON object of a 200 answer, else the error its status means."""
    status = response.status_code
    if status == 200:
        body = response.json()
        return body if isinstance(body, dict) else {}
    code, message = graph_error(response)
    if status == 401:
        raise CredentialError(
            f"teams `token` was rejected by Graph (HTTP 401 {code}: {message}); expected a "
            "valid Microsoft Graph access token; get a new one and set `token`"
        )
    if status == 403:
        needed = permission_for(url)
        raise CredentialError(
            f"teams `token` may not read {url.split('?', 1)[0]} (HTTP 403 {code}); expected "
            f"the application permission {needed}; grant it (with admin consent) and issue a "
            "new token"
        )
    raise GraphError(status, code, f"Graph {url} returned HTTP {status} ({code}: {message})")
