"""The GitLab connector: a branch's files, issues, merge requests and wiki pages of projects.

Each project is read in phases (files, issues, merge requests, wiki), with a checkpoint
after every page, so a run resumes mid-listing. Files: the first run lists the branch's
tree at its head commit (``/repository/tree?recursive=true&pagination=keyset``); later
runs compare the saved commit with the new head (``/repository/compare?straight=true``)
and read only the changed files, yielding ``Deleted`` for removed and renamed ones. A
saved commit GitLab no longer knows (a force push, then housekeeping) or a compare that
timed out lists the tree again, as does a saved page token GitLab refuses. Issues and
merge requests are listed ``order_by=updated_at&sort=asc`` with ``updated_after`` = the
newest seen minus ``window_overlap``; closed is not deleted. A project whose readers
changed is listed in full. Deletes: the diff, and ``enumerate()``. A project whose ACL
cannot be read is a prefix ``Failure``: nothing of it indexed, nothing deleted.
See docs/connectors/gitlab.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, ClassVar

from headwater.connectors._governed import governed_transport
from headwater.connectors.base import ConnectorCapabilities, ReadStream, SourceContext
from headwater.connectors.gitlab._acl import GitlabAcl, fingerprint
from headwater.connectors.gitlab._client import (
    BadRequest,
    GitlabClient,
    MissingAtServer,
    project_path,
)
from headwater.connectors.gitlab._files import ChangedFiles, JsonCache, compare, tree_params
from headwater.connectors.gitlab._items import (
    FILE,
    ISSUES,
    MRS,
    WIKIS,
    blob_document,
    item_document,
    markdown,
    object_id,
    parse_time,
    split_id,
    wiki_document,
    z,
)
from headwater.connectors.gitlab._options import GitlabOptions
from headwater.connectors.globs import KeyFilter
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.retry import RetryPolicy
from headwater.types import (
    Access,
    Checkpoint,
    Failure,
    KnownVersions,
    ListedGroup,
    SourceItem,
    Stage,
    Window,
)
from headwater.units import parse_duration

Phase = Iterator[SourceItem | dict[str, Any]]  # items, and a dict: "checkpoint here, with"


class GitlabConnector:
    """Reads files, issues, merge requests and wiki pages of the configured projects."""

    type_name: ClassVar[str] = "gitlab"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[GitlabOptions]] = GitlabOptions

    def __init__(self, options: GitlabOptions, context: SourceContext) -> None:
        self.options = options
        self._web = options.base_url.rstrip("/")
        self._overlap = parse_duration(options.window_overlap) or timedelta(0)
        self._keys = KeyFilter(options.include, options.exclude)
        self._client = GitlabClient(
            options.base_url,
            token=options.token.get_secret_value(),
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(context, "gitlab", options.token.get_secret_value()),
            policy=options.retry_policy(),
        )
        self._acl = GitlabAcl(
            self._client,
            context.source_id,
            internal_as_public=options.internal_as_public,
            kind=options.identity_kind,
        )
        self._branches: dict[str, str] = {}
        self._cache = JsonCache(context.state_dir / "gitlab-enumerate.json")
        self._files_api = ChangedFiles(self._client, self._web, self._keys)

    def _phases(self) -> list[str]:
        o = self.options
        wanted = [
            (FILE, o.include_files),
            (ISSUES, o.include_issues),
            (MRS, o.include_merge_requests),
            (WIKIS, o.include_wiki),
        ]
        return [name for name, on in wanted if on]

    def validate(self) -> None:
        """Look up each project and its branch once, without retries."""
        once = RetryPolicy(attempts=1)
        try:
            for project in self.options.projects:
                try:
                    info = self._client.get(project_path(project), policy=once)
                except MissingAtServer as exc:
                    raise ConfigError(
                        f"gitlab `projects`: no project {project!r} visible to the token "
                        "(GitLab answers 404 for projects it may not see); fix `projects` or "
                        "give the token's user at least the Reporter role on it"
                    ) from exc
                branch = self.options.branch or info.get("default_branch")
                if self.options.include_files and branch:
                    self._head(project, str(branch), policy=once)
        except TransientError as exc:
            raise TransientError(
                f"gitlab `base_url` {self.options.base_url}: {exc}; expected the GitLab API "
                "answering there; check `base_url` and try again later"
            ) from exc

    def _branch(self, project: str) -> str:
        if project not in self._branches:
            branch = self.options.branch
            if branch is None:
                branch = str(self._client.get(project_path(project)).get("default_branch") or "")
            self._branches[project] = branch
        return self._branches[project]

    def _head(self, project: str, branch: str, policy: RetryPolicy | None = None) -> str:
        """The commit id at the head of ``branch``."""
        path = f"{project_path(project)}/repository/branches/{branch}"
        try:
            return str(self._client.get(path, policy=policy)["commit"]["id"])
        except MissingAtServer as exc:
            raise ConfigError(
                f"gitlab `branch`: project {project!r} has no branch {branch!r}; fix `branch` "
                "(or leave it out to read each project's default branch)"
            ) from exc

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield what changed in each project since the checkpoint, phase by phase."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        prev: dict[str, dict[str, Any]] = state.get("prev", state.get("projects", {}))
        done: dict[str, dict[str, Any]] = dict(state.get("done", {}))
        at: dict[str, Any] | None = state.get("at")
        phases = self._phases()
        for index, project in enumerate(self.options.projects):
            if at is not None and index < at["project"]:
                continue
            here = at if at is not None and index == at["project"] else None
            try:
                access = self._acl.project_access(project)
            except TransientError as exc:
                if project in prev:
                    done[project] = prev[project]
                yield self._acl_failure(project, exc)
                continue
            before = prev.get(project) if checkpoint is not None else None
            relist = before is None or before.get("acl") != fingerprint(access)
            entry: dict[str, Any] = dict(here["entry"]) if here else {}
            entry["acl"] = fingerprint(access)
            start = here["phase"] if here else 0
            for number in range(start, len(phases)):
                resume = here if here is not None and number == here["phase"] else None
                kind = phases[number]
                for got in self._phase(kind, project, access, before, relist, entry, resume):
                    if isinstance(got, dict):
                        spot = {"project": index, "phase": number, "entry": entry, **got}
                        yield Checkpoint(json.dumps({"prev": prev, "done": done, "at": spot}))
                    else:
                        yield got
                after = {"project": index, "phase": number + 1, "entry": entry}
                if number + 1 == len(phases):
                    after = {"project": index + 1, "phase": 0, "entry": {}}
                    done[project] = entry
                yield Checkpoint(json.dumps({"prev": prev, "done": done, "at": after}))
            if not phases:
                done[project] = entry
        return Checkpoint(json.dumps({"projects": done}, sort_keys=True))

    def _acl_failure(self, project: str, exc: Exception) -> Failure:
        return Failure(
            object_id=project + "/-/",
            locator=f"{self._web}/{project}",
            stage=Stage.ENUMERATE.value,
            error_class="acl_unavailable",
            message=f"gitlab project {project!r}: its readers could not be read ({exc}); "
            "nothing of it is indexed or deleted this run; the next sync tries again",
            prefix=True,
        )

    def _phase(
        self,
        kind: str,
        project: str,
        access: Access,
        before: dict[str, Any] | None,
        relist: bool,
        entry: dict[str, Any],
        resume: dict[str, Any] | None,
    ) -> Phase:
        if kind == FILE:
            return self._files(project, access, before, relist, entry, resume)
        if kind == WIKIS:
            return self._wiki(project, access)
        return self._items(kind, project, access, before, relist, entry, resume)

    def _files(
        self,
        project: str,
        access: Access,
        before: dict[str, Any] | None,
        relist: bool,
        entry: dict[str, Any],
        resume: dict[str, Any] | None,
    ) -> Phase:
        branch = self._branch(project)
        if resume is not None and resume.get("sha"):
            sha, url = str(resume["sha"]), resume.get("next")
        else:
            sha, url = self._head(project, branch), None
            old = (before or {}).get(FILE)
            if old == sha and not relist:
                entry[FILE] = sha
                return
            if old and not relist:
                diffs = compare(self._client, project, str(old), sha)
                if diffs is not None:
                    changed = self._files_api.changed(project, branch, sha, diffs, access)
                    yield from changed
                    entry[FILE] = sha
                    return
        first = f"{project_path(project)}/repository/tree"
        params = tree_params(sha, self.options.page_size)
        try:
            page = self._client.page(url) if url else self._client.page(first, params)
        except BadRequest:  # a saved page token GitLab refuses now: list the tree again
            page = self._client.page(first, params)
        while True:
            for row in page.body:
                path = str(row["path"])
                if row.get("type") == "blob" and self._keys(path):
                    yield blob_document(self._web, project, branch, path, str(row["id"]), access)
            if page.next is None:
                break
            yield {"sha": sha, "next": page.next}
            page = self._client.page(page.next)
        entry[FILE] = sha

    def _items(
        self,
        kind: str,
        project: str,
        access: Access,
        before: dict[str, Any] | None,
        relist: bool,
        entry: dict[str, Any],
        resume: dict[str, Any] | None,
    ) -> Phase:
        newest: str | None = None
        if resume is not None and resume.get("next"):
            url: str | None = str(resume["next"])
            newest = resume.get("newest")
            page = self._client.page(str(url))
        else:
            params: dict[str, str | int] = {
                "state": "all",
                "order_by": "updated_at",
                "sort": "asc",
                "per_page": self.options.page_size,
            }
            seen = (before or {}).get(kind)
            if seen and not relist:
                params["updated_after"] = z(datetime.fromisoformat(seen) - self._overlap)
                newest = seen
            page = self._client.page(f"{project_path(project)}/{kind}", params)
        while True:
            for item in page.body:
                updated = parse_time(item.get("updated_at"))
                if updated is not None and (newest is None or updated.isoformat() > newest):
                    newest = updated.isoformat()
                yield item_document(project, kind, item, access)
            if page.next is None:
                break
            yield {"next": page.next, "newest": newest}
            page = self._client.page(page.next)
        if newest is not None:
            entry[kind] = newest

    def _wiki(self, project: str, access: Access) -> Phase:
        path = f"{project_path(project)}/wikis"
        try:
            pages = self._client.get(path, {"with_content": "1"})
        except MissingAtServer:
            return  # the wiki is off for this project
        for page in sorted(pages, key=lambda p: str(p["slug"])):
            yield wiki_document(self._web, project, page, access)

    def fetch(self, ref: str) -> bytes:
        """A blob's bytes, or an issue's or merge request's text and notes as markdown."""
        kind, project, key = json.loads(ref)
        base = project_path(project)
        try:
            if kind == FILE:
                return self._client.raw(f"{base}/repository/blobs/{key}/raw")
            item = self._client.get(f"{base}/{kind}/{key}")
            notes: list[dict[str, Any]] = []
            if self.options.include_comments:
                params: dict[str, str | int] = {"sort": "asc", "order_by": "created_at"}
                params["per_page"] = 100
                notes = self._client.every(f"{base}/{kind}/{key}/notes", params)
        except MissingAtServer as exc:
            raise ItemError(
                "not_found", f"gitlab {kind} {key} of {project} is gone: {exc}"
            ) from exc
        return markdown(item, notes)

    def enumerate(self) -> Iterator[str]:
        """Every current object id of every project; raises if any page fails.

        A branch's files are listed from its tree once per head commit: the ids are kept
        in ``state_dir`` (``gitlab-enumerate.json``) with the commit and the filters, and
        reused while the head has not moved (a cache: losing it costs one listing).
        """
        cache, fresh = self._cache.load(), {}
        for project in self.options.projects:
            base = project_path(project)
            if self.options.include_files:
                fresh[project] = self._file_ids(project, cache.get(project) or {})
                yield from fresh[project]["ids"]
            for kind in (ISSUES, MRS):
                if kind in self._phases():
                    for item in self._client.every(
                        f"{base}/{kind}", {"state": "all", "per_page": 100}
                    ):
                        yield object_id(project, kind, int(item["iid"]))
            if self.options.include_wiki:
                try:
                    pages = self._client.get(f"{base}/wikis")
                except MissingAtServer:
                    pages = []
                yield from (object_id(project, WIKIS, str(p["slug"])) for p in pages)
        self._cache.save(fresh)

    def _file_ids(self, project: str, known: dict[str, Any]) -> dict[str, Any]:
        """The branch's file ids with its head commit: ``known`` while the head and the
        filters are the same, else listed from the tree."""
        sha = self._head(project, self._branch(project))
        scope = [self.options.include, self.options.exclude]
        if [known.get("sha"), known.get("scope")] == [sha, scope] and "ids" in known:
            return known
        tree = tree_params(sha, 100)
        rows = self._client.every(f"{project_path(project)}/repository/tree", tree)
        ids = [
            object_id(project, FILE, str(r["path"]))
            for r in rows
            if r.get("type") == "blob" and self._keys(str(r["path"]))
        ]
        return {"sha": sha, "scope": scope, "ids": ids}

    def in_scope(self, oid: str) -> bool:
        """Whether the configured projects, kinds and include/exclude select ``oid``."""
        try:
            project, kind, key = split_id(oid)
        except ValueError:
            return False
        if project not in self.options.projects or kind not in self._phases():
            return False
        return kind != FILE or self._keys(key)

    def groups(self) -> Iterator[ListedGroup]:
        """Every group granting read on the projects and its ancestors, with members."""
        return self._acl.groups(self.options.projects)
