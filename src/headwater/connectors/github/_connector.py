"""The GitHub connector: issues and pull requests (with their comments) of chosen repos.

Each repo is listed with ``GET /repos/{repo}/issues?state=all&sort=updated&direction=asc``
(pull requests come in the same list), Link paged. After the first run the list asks
``since`` = the newest ``updated_at`` seen (minus ``window_overlap``), kept per repo in
the checkpoint with the first page's ETag: when nothing changed the URL is the same and
GitHub answers ``If-None-Match`` with 304, which downloads nothing and costs no rate
limit. Text (body, comments, review comments) is fetched lazily when ``updated_at``
moved; ``refetch`` reads named issues again (a webhook's targeted read). A repo whose
readers changed (visibility, collaborators, teams: a fingerprint in the checkpoint) is
listed in full. Deletes are found by ``enumerate()``. Discussions need
the GraphQL API and are not read; a wiki is a git repository (use the ``git`` connector).
See docs/connectors/github.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, SecretStr, field_validator

from headwater.clock import as_utc, iso
from headwater.connectors._governed import governed_transport
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.github._acl import PERM_METADATA, GithubAcl, fingerprint
from headwater.connectors.github._client import GithubClient, MissingAtServer
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.retry import RetryPolicy
from headwater.types import (
    Access,
    Checkpoint,
    Deleted,
    KnownVersions,
    ListedGroup,
    SourceDocument,
    Window,
)
from headwater.units import parse_duration

PERM_ISSUES = "Issues: read"
PERM_PULLS = "Pull requests: read"


class GithubOptions(ConnectorOptions):
    """The keys of a ``github`` source."""

    token: SecretStr
    repos: list[str] = Field(min_length=1)
    base_url: str = Field(default="https://api.github.com", pattern=r"^https?://")
    identity_kind: str = Field(default="github", pattern=r"^[a-z][a-z0-9-]*$")
    include_pull_requests: bool = True
    include_comments: bool = True
    window_overlap: str = "1m"
    page_size: int = Field(default=100, ge=1, le=100)
    timeout: float = Field(default=30.0, gt=0)
    max_attempts: int = Field(default=5, ge=1)
    retry_initial_wait: float = Field(default=1.0, ge=0)

    @field_validator("repos")
    @classmethod
    def _owner_name(cls, value: list[str]) -> list[str]:
        bad = [r for r in value if r.count("/") != 1 or not all(r.split("/"))]
        if bad:
            raise ValueError(f"repos {bad} are not owner/name; expected e.g. 'octo/hello'")
        return value

    @field_validator("window_overlap")
    @classmethod
    def _duration(cls, value: str) -> str:
        try:
            parse_duration(value)
        except (ValueError, ConfigError) as exc:
            raise ValueError(f'window_overlap {value!r} is not a duration, e.g. "1m"') from exc
        return value


class JsonCache:
    """A JSON file in the connector's state directory (a cache: losing it costs requests)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, dict[str, Any]]:
        """The cached data, or empty when the file is missing or unreadable."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def save(self, data: dict[str, dict[str, Any]]) -> None:
        """Replace the cached data with ``data`` (written to a temp file, then renamed)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_suffix(".tmp")
        temp.write_text(json.dumps(data))
        temp.replace(self.path)


def _time(value: str | None) -> datetime | None:
    return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00"))) if value else None


def _z(moment: datetime) -> str:
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


class GithubConnector:
    """Reads issues and pull requests of the configured repositories."""

    type_name: ClassVar[str] = "github"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(windowed=True)
    Options: ClassVar[type[GithubOptions]] = GithubOptions

    def __init__(self, options: GithubOptions, context: SourceContext) -> None:
        self.options = options
        self._overlap = parse_duration(options.window_overlap) or timedelta(0)
        self._client = GithubClient(
            options.base_url,
            token=options.token.get_secret_value(),
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(context, "github", options.token.get_secret_value()),
            policy=RetryPolicy(
                attempts=options.max_attempts, initial_wait=options.retry_initial_wait
            ),
        )
        self._acl = GithubAcl(self._client, context.source_id, options.identity_kind)
        self._enum_cache = JsonCache(context.state_dir / "github-enumerate-etags.json")

    def validate(self) -> None:
        """Look up each configured repo once, without retries."""
        once = RetryPolicy(attempts=1)
        try:
            for repo in self.options.repos:
                try:
                    self._client.page(f"/repos/{repo}", permission=PERM_METADATA, policy=once)
                except MissingAtServer as exc:
                    raise ConfigError(
                        f"github `repos`: no repository {repo!r} visible to the token (GitHub "
                        "answers 404 for private repos it may not see); fix `repos` or grant "
                        "the token access to it"
                    ) from exc
                self._client.page(
                    f"/repos/{repo}/issues", {"per_page": 1}, permission=PERM_ISSUES, policy=once
                )
        except TransientError as exc:
            raise TransientError(
                f"github `base_url` {self.options.base_url}: {exc}; expected the GitHub API "
                "answering there; check `base_url` and try again later"
            ) from exc

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the repos' issues and pull requests updated since the checkpoint."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        prev: dict[str, dict[str, str]] = state.get("prev", state.get("repos", {}))
        done: dict[str, dict[str, str]] = dict(state.get("done", {}))
        resume = state.get("at")
        for index, repo in enumerate(self.options.repos):
            if resume is not None and index < resume["repo"]:
                continue
            access = self._acl.repo_access(repo)
            mark = fingerprint(access)
            before = prev.get(repo) if checkpoint is not None else None
            exact = checkpoint is None and window.start is not None  # a bare window
            first = resume is None or index != resume["repo"] or not resume.get("next")
            if resume is not None and not first:
                url, etag, newest = resume["next"], None, resume.get("newest")
                entry = dict(resume["entry"])
            else:
                url, etag, newest, entry = self._start(repo, window, before, mark, exact)
            while url:
                page = self._client.page(url, permission=PERM_ISSUES, etag=etag)
                if page.status == 304:
                    break  # nothing changed since the last run: nothing downloaded
                if first:
                    # A 304 for a one-page answer proves nothing changed; for a longer one a
                    # changed item moves to a later page, so its first page's ETag is not kept.
                    entry.pop("etag", None)
                    if page.etag and page.next is None:
                        entry["etag"] = page.etag
                first, etag = False, None
                for item in page.body:
                    updated = _time(item.get("updated_at"))
                    if updated is not None and (newest is None or iso(updated) > newest):
                        newest = iso(updated)
                    if "pull_request" in item and not self.options.include_pull_requests:
                        continue
                    if (
                        exact
                        and window.start is not None
                        and updated is not None
                        and not (window.start - self._overlap < updated <= window.end)
                    ):
                        continue
                    yield self._document(repo, item, access)
                url = page.next
                done[repo] = entry | ({"newest": newest} if newest else {})
                at = {
                    "repo": index if url else index + 1,
                    "next": url,
                    "newest": newest,
                    "entry": entry,
                }
                yield Checkpoint(json.dumps({"prev": prev, "done": done, "at": at}))
            done[repo] = entry | ({"newest": newest} if newest else {})
        return Checkpoint(json.dumps({"repos": done}, sort_keys=True))

    def _start(
        self, repo: str, window: Window, before: dict[str, str] | None, mark: str, exact: bool
    ) -> tuple[str, str | None, str | None, dict[str, str]]:
        """The first URL, the ETag to send with it, the newest time so far, the entry."""
        query = f"state=all&sort=updated&direction=asc&per_page={self.options.page_size}"
        base = f"{self.options.base_url.rstrip('/')}/repos/{repo}/issues?{query}"
        since: datetime | None = None
        if exact and window.start is not None:
            since = window.start - self._overlap
        elif before is not None and before.get("acl") == mark and before.get("newest"):
            since = datetime.fromisoformat(before["newest"]) - self._overlap
        url = base + (f"&since={_z(since)}" if since is not None else "")
        entry = {"acl": mark, "url": url}
        # A 304 proves only the listing unchanged: with new readers every item is re-sent
        same = before is not None and before.get("url") == url and before.get("acl") == mark
        etag = before.get("etag") if before is not None and same else None
        if etag:
            entry["etag"] = etag
        newest = before.get("newest") if before and since is not None else None
        return url, etag, newest, entry

    def _document(self, repo: str, item: dict[str, Any], access: Access) -> SourceDocument:
        kind = "pulls" if "pull_request" in item else "issues"
        number = item["number"]
        updated = _time(item.get("updated_at"))
        return SourceDocument(
            object_id=f"{repo}/{kind}/{number}",
            locator=str(item.get("html_url", "")),
            title=f"{repo}#{number}: {item.get('title', '')}",
            version=str(item.get("updated_at", "")),
            fetch_ref=f"{repo}/{kind}/{number}",
            media_type="text/markdown",
            updated_at=updated,
            sequence=int(updated.timestamp()) if updated else None,
            metadata={
                "repo": repo,
                "kind": "pull_request" if kind == "pulls" else "issue",
                "state": str(item.get("state", "")),
            },
            access=access,
        )

    def fetch(self, ref: str) -> bytes:
        """Title, body, comments and (for a pull request) review comments, as markdown."""
        owner, name, kind, number = ref.split("/")
        repo = f"{owner}/{name}"
        try:
            item = self._client.get(f"/repos/{repo}/issues/{number}", permission=PERM_ISSUES)
        except MissingAtServer as exc:
            raise ItemError("not_found", f"github {ref} is gone: {exc}") from exc
        parts = [f"# {item.get('title', '')}", str(item.get("body") or "")]
        if self.options.include_comments:
            comments = self._client.every(
                f"/repos/{repo}/issues/{number}/comments", {"per_page": 100}, permission=PERM_ISSUES
            )
            if kind == "pulls":
                comments += self._client.every(
                    f"/repos/{repo}/pulls/{number}/comments",
                    {"per_page": 100},
                    permission=PERM_PULLS,
                )
            for comment in comments:
                who = (comment.get("user") or {}).get("login", "someone")
                where = f" on {comment['path']}" if comment.get("path") else ""
                parts.append(f"## {who}{where} ({comment.get('created_at', '')})")
                parts.append(str(comment.get("body") or ""))
        return "\n\n".join(p for p in parts if p).encode()

    def refetch(self, object_ids: Sequence[str]) -> Iterator[SourceDocument | Deleted]:
        """Each selected issue or pull request as it is now, with its repo's readers.

        ``Deleted`` only when GitHub answers 404 or 410 for the issue while the repo itself
        is still visible (a repo the token no longer sees raises: nothing is confirmed).
        """
        readers: dict[str, Access] = {}
        for object_id in object_ids:
            parts = object_id.split("/")
            if len(parts) != 4 or not parts[3].isdigit() or parts[2] not in ("issues", "pulls"):
                continue
            repo, kind, number = f"{parts[0]}/{parts[1]}", parts[2], parts[3]
            if repo not in self.options.repos or (
                kind == "pulls" and not self.options.include_pull_requests
            ):
                continue
            try:
                item = self._client.get(f"/repos/{repo}/issues/{number}", permission=PERM_ISSUES)
            except MissingAtServer:
                self._client.get(f"/repos/{repo}", permission=PERM_METADATA)  # raises if gone
                yield Deleted(object_id=object_id)
                continue
            if "pull_request" in item and not self.options.include_pull_requests:
                continue
            if repo not in readers:
                readers[repo] = self._acl.repo_access(repo)
            yield self._document(repo, item, readers[repo])

    def enumerate(self) -> Iterator[str]:
        """Every issue and pull request id of every repo; raises if any page fails.

        Pages are listed oldest first, and every page but the last is asked with the ETag
        it had at the last complete enumeration (kept in ``state_dir``): a 304 reuses the
        ids recorded with it, so an unchanged repo downloads only its last page. The last
        page is always read, since a new page may follow it.
        """
        cache = self._enum_cache.load()
        fresh: dict[str, dict[str, Any]] = {}
        for repo in self.options.repos:
            query = f"state=all&sort=created&direction=asc&per_page={self.options.page_size}"
            url: str | None = f"{self.options.base_url.rstrip('/')}/repos/{repo}/issues?{query}"
            while url:
                known = cache.get(url) if cache.get(url, {}).get("next") else None
                etag = known.get("etag") if known else None
                page = self._client.page(url, permission=PERM_ISSUES, etag=etag)
                if page.status == 304 and known is not None:
                    ids, following = list(known["ids"]), known["next"]
                else:
                    ids = [self._id(repo, item) for item in page.body]
                    following = page.next
                fresh[url] = {"etag": page.etag or etag, "ids": ids, "next": following}
                yield from (i for i in ids if i)
                url = following
        self._enum_cache.save(fresh)

    def _id(self, repo: str, item: dict[str, Any]) -> str:
        if "pull_request" in item:
            return f"{repo}/pulls/{item['number']}" if self.options.include_pull_requests else ""
        return f"{repo}/issues/{item['number']}"

    def groups(self) -> Iterator[ListedGroup]:
        """Every team with access to the repos, with its members' logins and label."""
        return self._acl.groups(self.options.repos)
