"""The Jira Cloud connector: issues of chosen projects, with description and comments.

Each project is listed with the enhanced JQL search (``/rest/api/3/search/jql``, paged by
``nextPageToken``) asking only for the fields that decide version and access, so the
listing downloads no description or comment: those are fetched lazily (``fetch``) when
``updated`` differs from the manifest's (adding a comment moves ``updated``). A windowed
run adds ``updated >= "start - window_overlap - 1 day"`` to the JQL (JQL compares
minutes in the API user's time zone) and filters exactly. A project is read in full on
the first run, when its Browse Projects holders changed (a fingerprint per project in the
checkpoint) and every ``acl_refresh_every``. Deletes are found by ``enumerate()`` (every
issue id the JQL selects). See docs/connectors/jira.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from pydantic import Field, SecretStr, field_validator

from headwater.clock import as_utc
from headwater.connectors._atlassian import AtlassianClient
from headwater.connectors._containers import container_state, needs_full_listing
from headwater.connectors._governed import governed_transport
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.http import MissingAtServer
from headwater.connectors.jira._acl import SCOPE_ADMIN, SCOPE_PROJECT, Grant, JiraAcl
from headwater.connectors.jira._adf import adf_to_text
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.retry import RetryPolicy
from headwater.types import (
    Checkpoint,
    Deleted,
    KnownVersions,
    ListedGroup,
    SourceDocument,
    Window,
)
from headwater.units import parse_duration

SEARCH = "/rest/api/3/search/jql"
LIST_FIELDS = "summary,updated,project,security,reporter,assignee,issuetype"
JQL_ZONE_SLACK = timedelta(hours=24)


def _duration(value: str) -> str:
    try:
        parse_duration(value)
    except (ValueError, ConfigError) as exc:
        raise ValueError(f'{value!r} is not a duration; expected e.g. "10m", "24h"') from exc
    return value


class JiraOptions(ConnectorOptions):
    """The keys of a ``jira`` source."""

    base_url: str = Field(pattern=r"^https?://")
    email: str = Field(min_length=3)
    api_token: SecretStr
    projects: list[str] = Field(min_length=1)
    jql: str | None = None
    include_comments: bool = True
    window_overlap: str = "10m"
    acl_refresh_every: str = "24h"
    page_size: int = Field(default=50, ge=1, le=100)
    timeout: float = Field(default=30.0, gt=0)
    max_attempts: int = Field(default=5, ge=1)
    retry_initial_wait: float = Field(default=1.0, ge=0)

    _check_durations = field_validator("window_overlap", "acl_refresh_every")(_duration)

    @field_validator("jql")
    @classmethod
    def _no_order(cls, value: str | None) -> str | None:
        if value is not None and "order by" in value.lower():
            raise ValueError(
                f"jql {value!r} has ORDER BY; expected a filter only (Headwater orders by "
                "key); remove the ORDER BY clause"
            )
        return value


def _next_token(data: dict[str, Any]) -> str | None:
    """The ``nextPageToken`` of a search page, None on the last page.

    Jira documents the token as absent or null on the last page; ``isLast`` is not
    always sent, so a token without ``isLast: true`` means another page follows.
    https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/#api-rest-api-3-search-jql-get
    """
    token = data.get("nextPageToken")
    if not token or data.get("isLast") is True:
        return None
    return str(token)


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return as_utc(datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%f%z"))


class JiraConnector:
    """Reads the issues of the configured projects."""

    type_name: ClassVar[str] = "jira"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(windowed=True)
    Options: ClassVar[type[JiraOptions]] = JiraOptions

    def __init__(self, options: JiraOptions, context: SourceContext) -> None:
        self.options = options
        self._overlap = parse_duration(options.window_overlap) or timedelta(0)
        self._refresh = parse_duration(options.acl_refresh_every) or timedelta(0)
        self._client = AtlassianClient(
            options.base_url,
            email=options.email,
            token=options.api_token.get_secret_value(),
            product="Jira",
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(
                context, "atlassian", options.api_token.get_secret_value()
            ),
            policy=RetryPolicy(
                attempts=options.max_attempts, initial_wait=options.retry_initial_wait
            ),
        )
        self._acl = JiraAcl(self._client, context.source_id)

    def validate(self) -> None:
        """Look up each configured project once, without retries."""
        once = RetryPolicy(attempts=1)
        try:
            for key in self.options.projects:
                try:
                    self._client.get(f"/rest/api/3/project/{key}", scope=SCOPE_PROJECT, policy=once)
                except MissingAtServer as exc:
                    raise ConfigError(
                        f"jira `projects`: no project {key!r} at {self.options.base_url} (or "
                        "the account cannot browse it); expected an existing project key; "
                        "fix `projects` or grant the account Browse Projects"
                    ) from exc
                self._client.get(
                    f"/rest/api/3/project/{key}/permissionscheme", scope=SCOPE_ADMIN, policy=once
                )
            first = self.options.projects[0]
            self._client.get(
                SEARCH,
                {"jql": self._jql(first, None), "maxResults": 1, "fields": "id"},
                scope=SCOPE_PROJECT,
                policy=once,
            )
        except TransientError as exc:
            raise TransientError(
                f"jira `base_url` {self.options.base_url}: {exc}; expected a Jira Cloud site "
                "answering there; check `base_url` and try again later"
            ) from exc
        except ConfigError as exc:
            if "HTTP 400" in str(exc) and self.options.jql:
                raise ConfigError(
                    f"jira `jql` {self.options.jql!r} was refused by the search (HTTP 400); "
                    "expected valid JQL; fix `jql`"
                ) from exc
            raise

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the projects' issues updated since the checkpoint; return the next."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        prev: dict[str, dict[str, str]] = state.get("prev", state.get("projects", {}))
        done: dict[str, dict[str, str]] = dict(state.get("done", {}))
        resume = state.get("at")
        for index, key in enumerate(self.options.projects):
            if resume is not None and index < resume["project"]:
                continue
            grant = self._acl.project_grant(key)
            mark = grant.fingerprint()
            before = prev.get(key)
            if resume is not None and index == resume["project"] and resume.get("token"):
                full, token = bool(resume["full"]), resume.get("token")
            else:
                full = needs_full_listing(window, checkpoint, before, mark, self._refresh)
                token = None
            done[key] = container_state(mark, full, window, before)
            low = None if full or window.start is None else window.start - self._overlap
            while True:
                params: dict[str, str | int] = {
                    "jql": self._jql(key, low),
                    "fields": LIST_FIELDS,
                    "maxResults": self.options.page_size,
                }
                if token:
                    params["nextPageToken"] = token
                data = self._client.get(SEARCH, params, scope=SCOPE_PROJECT)
                for issue in data.get("issues", []):
                    doc = self._document(key, issue, grant)
                    if (
                        low is None
                        or doc.updated_at is None
                        or (low < doc.updated_at <= window.end)
                    ):
                        yield doc
                token = _next_token(data)
                at = {"project": index if token else index + 1, "full": full, "token": token}
                yield Checkpoint(json.dumps({"prev": prev, "done": done, "at": at}))
                if not token:
                    break
        return Checkpoint(json.dumps({"projects": done}, sort_keys=True))

    def _jql(self, key: str, low: datetime | None) -> str:
        jql = f'project = "{key}"'
        if self.options.jql:
            jql += f" AND ({self.options.jql})"
        if low is not None:
            jql += f' AND updated >= "{as_utc(low) - JQL_ZONE_SLACK:%Y/%m/%d %H:%M}"'
        return jql + " ORDER BY key ASC"

    def _document(self, project: str, issue: dict[str, Any], grant: Grant) -> SourceDocument:
        fields = issue.get("fields", {})
        updated = _parse_time(fields.get("updated"))
        security = fields.get("security")
        if security:
            access = self._acl.level_grant(project, str(security["id"])).access(fields)
        else:
            access = grant.access(fields)
        site = self.options.base_url.rstrip("/")
        return SourceDocument(
            object_id=str(issue["id"]),
            locator=f"{site}/browse/{issue['key']}",
            title=f"{issue['key']}: {fields.get('summary', '')}",
            version=str(fields.get("updated", "")),
            fetch_ref=str(issue["id"]),
            media_type="text/markdown",
            updated_at=updated,
            sequence=int(updated.timestamp() * 1000) if updated else None,
            metadata={
                "project": project,
                "key": str(issue["key"]),
                "issue_type": str((fields.get("issuetype") or {}).get("name", "")),
            },
            access=access,
        )

    def refetch(self, object_ids: Sequence[str]) -> Iterator[SourceDocument | Deleted]:
        """Each issue of ``object_ids`` as it is now, with its project's (or security
        level's) readers, by ``GET /rest/api/3/issue/{id}`` with the listing's fields; the
        description and comments are fetched lazily, as in a sync.

        ``Deleted`` when Jira answers 404 (the issue is gone, or the account may no longer
        browse it: a listing would not see it either), or when it no longer matches
        ``jql``. An issue of a project this source does not read yields nothing.
        https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-get
        """
        grants: dict[str, Grant] = {}
        for object_id in object_ids:
            if not object_id.isdigit():
                continue
            try:
                issue = self._client.get(
                    f"/rest/api/3/issue/{object_id}", {"fields": LIST_FIELDS}, scope=SCOPE_PROJECT
                )
            except MissingAtServer:
                yield Deleted(object_id=object_id)
                continue
            key = str((issue.get("fields", {}).get("project") or {}).get("key", ""))
            if key not in self.options.projects:
                continue
            if self.options.jql and not self._matches(key, object_id):
                yield Deleted(object_id=object_id)
                continue
            if key not in grants:
                grants[key] = self._acl.project_grant(key)
            yield self._document(key, issue, grants[key])

    def _matches(self, key: str, issue_id: str) -> bool:
        """Whether the configured ``jql`` selects the issue (one search for its id)."""
        jql = self._jql(key, None).replace(" ORDER BY", f" AND id = {issue_id} ORDER BY")
        data = self._client.get(
            SEARCH, {"jql": jql, "fields": "id", "maxResults": 1}, scope=SCOPE_PROJECT
        )
        return any(str(i.get("id")) == issue_id for i in data.get("issues", []))

    def fetch(self, ref: str) -> bytes:
        """The issue as markdown: key and summary, description, then every comment."""
        try:
            issue = self._client.get(
                f"/rest/api/3/issue/{ref}", {"fields": "summary,description"}, scope=SCOPE_PROJECT
            )
        except MissingAtServer as exc:
            raise ItemError("not_found", f"jira issue {ref} is gone: {exc}") from exc
        fields = issue.get("fields", {})
        parts = [
            f"# {issue.get('key', ref)}: {fields.get('summary', '')}",
            adf_to_text(fields.get("description")),
        ]
        if self.options.include_comments:
            for comment in self._comments(ref):
                author = (comment.get("author") or {}).get("displayName", "someone")
                parts.append(f"## Comment by {author} ({comment.get('created', '')})")
                parts.append(adf_to_text(comment.get("body")))
        return "\n\n".join(p for p in parts if p).encode()

    def _comments(self, ref: str) -> Iterator[dict[str, Any]]:
        start = 0
        while True:
            data = self._client.get(
                f"/rest/api/3/issue/{ref}/comment",
                {"startAt": start, "maxResults": 100, "orderBy": "created"},
                scope=SCOPE_PROJECT,
            )
            comments = data.get("comments", [])
            yield from comments
            start += len(comments)
            if not comments or start >= int(data.get("total", 0)):
                return

    def enumerate(self) -> Iterator[str]:
        """Every issue id the configured JQL selects; raises if any page fails."""
        for key in self.options.projects:
            token: str | None = None
            while True:
                params: dict[str, str | int] = {
                    "jql": self._jql(key, None),
                    "fields": "id",
                    "maxResults": self.options.page_size,
                }
                if token:
                    params["nextPageToken"] = token
                data = self._client.get(SEARCH, params, scope=SCOPE_PROJECT)
                for issue in data.get("issues", []):
                    yield str(issue["id"])
                token = _next_token(data)
                if not token:
                    break

    def groups(self) -> Iterator[ListedGroup]:
        """Every group of the site with its member emails and name (its label)."""
        return self._acl.groups()
