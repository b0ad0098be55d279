"""The git CLI side of the git connector: a bare mirror and the few plumbing commands.

The source is fetched into a private bare repository (``{state_dir}/git/{source_id}``)
under ``refs/headwater/<branch>``; every read works on that mirror, never on the user's
checkout. Output is parsed from NUL-separated plumbing formats and streamed, so a big
tree is never held in memory. Git's stderr becomes a Headwater error in one line.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from headwater.errors import (
    ConfigError,
    CredentialError,
    FatalError,
    HeadwaterError,
    TransientError,
)

_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_LITERAL_PATHSPECS": "1"}
_CREDENTIALS_IN_URL = re.compile(r"(?<=://)[^/@\s]+@")


def redact(text: str) -> str:
    """Text with any ``user:password@`` of a URL removed."""
    return _CREDENTIALS_IN_URL.sub("***@", text)


@dataclass(frozen=True)
class Entry:
    """One path in a tree listing or a diff; ``sha`` is None for a deletion."""

    path: str
    sha: str | None
    mode: str
    size: int = 0


@dataclass(frozen=True)
class CommitInfo:
    """The commit that last changed a file: its sha, author and time."""

    sha: str
    author: str
    committed_at: datetime


def classify(stderr: str, *, what: str) -> HeadwaterError:
    """A Headwater error for git's complaint about ``what`` (a redacted URL or mirror)."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    reason = redact((fatal or lines or ["git failed without a message"])[0])[:200]
    text = stderr.lower()
    if any(
        s in text
        for s in (
            "could not read username",
            "authentication failed",
            "error: 401",
            "error: 403",
            "permission denied (publickey",
            "access denied",
        )
    ):
        return CredentialError(
            f"git repository {what}: access denied (401/403: {reason}); expected credentials "
            "git can use (a credential helper, a token in the URL, an SSH key); fix them"
        )
    if any(
        s in text
        for s in (
            "connection refused",
            "failed to connect",
            "could not resolve",
            "timed out",
            "couldn't connect",
            "connection reset",
        )
    ):
        return TransientError(
            f"git repository {what}: connection refused or unreachable ({reason}); expected "
            "a reachable git server; check `url` or start the server"
        )
    if "couldn't find remote ref" in text:  # git fetch of a branch the remote lacks
        return ConfigError(
            f"git repository {what} has no such branch ({reason}); expected an existing "
            "branch; fix `branch`"
        )
    if any(
        s in text
        for s in (
            "not found",
            "does not appear to be a git repository",
            "error: 404",
            "no such file",
            "does not exist",
        )
    ):
        return ConfigError(
            f"git repository {what} not found (404: {reason}); expected a clone URL or "
            "the path of a repository; fix `url`"
        )
    return FatalError(f"git repository {what}: {reason}")


class Mirror:
    """A bare repository mirroring one branch of a source."""

    def __init__(self, path: Path, url: str, branch: str | None) -> None:
        self.path = path
        self.url = url
        self.shown = redact(url)
        self._branch = branch

    def _git(self, *args: str, cwd: bool = True, timeout: float = 600) -> bytes:
        command = ["git", *(["-C", str(self.path)] if cwd else []), *args]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                env={**os.environ, **_ENV},
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TransientError(
                f"git repository {self.shown}: `git {args[0]}` timed out"
            ) from None
        if done.returncode != 0:
            raise classify(done.stderr.decode("utf-8", "replace"), what=self.shown)
        return done.stdout

    def _stream(self, *args: str) -> Iterator[bytes]:
        """NUL-separated records of a git command's output, read as it runs."""
        proc = subprocess.Popen(
            ["git", "-C", str(self.path), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **_ENV},
        )
        assert proc.stdout is not None and proc.stderr is not None
        buffer = b""
        try:
            while chunk := proc.stdout.read(65536):
                buffer += chunk
                *records, buffer = buffer.split(b"\0")
                yield from records
            if proc.wait() != 0:
                raise classify(proc.stderr.read().decode("utf-8", "replace"), what=self.shown)
            if buffer:
                yield buffer
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    # -- remote --------------------------------------------------------------------------

    def branch(self) -> str:
        """The configured branch, else the remote's default branch."""
        if self._branch is None:
            out = self._git("ls-remote", "--symref", self.url, "HEAD", cwd=False, timeout=60)
            found = re.search(rb"^ref: refs/heads/(\S+)\tHEAD", out, re.MULTILINE)
            if not found:
                raise ConfigError(
                    f"git repository {self.shown} has no default branch (empty repository?); "
                    "set `branch`"
                )
            self._branch = found.group(1).decode()
        return self._branch

    def probe(self) -> None:
        """Check the remote and the branch exist without fetching anything."""
        branch = self.branch()
        out = self._git("ls-remote", "--heads", self.url, branch, cwd=False, timeout=60)
        if f"\trefs/heads/{branch}\n".encode() not in out:
            raise ConfigError(
                f"git repository {self.shown} has no branch {branch!r}; expected an existing "
                "branch; fix `branch`"
            )

    def update(self) -> str:
        """Fetch the branch into the mirror; the head commit's sha."""
        if not (self.path / "HEAD").exists():
            self.path.mkdir(parents=True, exist_ok=True)
            self._git("init", "--bare", "--quiet")
        branch = self.branch()
        ref = f"refs/headwater/{branch}"
        # --update-shallow: a shallow clone as `url` (its history cut at a graft) is
        # fetched as it is; without it git rejects the ref ("shallow roots are not allowed
        # to be updated") and rev-parse fails with "Needed a single revision".
        self._git(
            "fetch",
            "--quiet",
            "--no-tags",
            "--force",
            "--update-shallow",
            self.url,
            f"+refs/heads/{branch}:{ref}",
        )
        return self._git("rev-parse", "--verify", f"{ref}^{{commit}}").decode().strip()

    # -- local plumbing ------------------------------------------------------------------

    def has_commit(self, sha: str) -> bool:
        """Whether the mirror holds the commit ``sha``."""
        try:
            self._git("cat-file", "-e", f"{sha}^{{commit}}")
        except HeadwaterError:
            return False
        return True

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether commit ``older`` is an ancestor of commit ``newer``."""
        command = ["git", "-C", str(self.path), "merge-base", "--is-ancestor", older, newer]
        return (
            subprocess.run(command, env={**os.environ, **_ENV}, capture_output=True).returncode == 0
        )

    def tree(self, commit: str) -> Iterator[Entry]:
        """Every blob of a commit's tree, in git's order."""
        for record in self._stream("ls-tree", "-r", "-z", "--long", commit):
            meta, _, path = record.partition(b"\t")
            mode, kind, sha, size = meta.split()
            if kind == b"blob":
                yield Entry(_text(path), sha.decode(), mode.decode(), int(size))

    def diff(self, base: str, head: str) -> Iterator[Entry]:
        """Paths that differ between two commits, in git's order; deletions have no sha."""
        records = self._stream("diff-tree", "-r", "-z", "--no-renames", base, head)
        for meta in records:
            path = next(records)
            _, new_mode, _, new_sha, status = meta.decode().lstrip(":").split()
            if status == "D":
                yield Entry(_text(path), None, new_mode)
            else:
                yield Entry(_text(path), new_sha, new_mode)

    def sizes(self, shas: Sequence[str]) -> dict[str, int]:
        """Object sizes in bytes, one ``cat-file --batch-check`` for all of them."""
        if not shas:
            return {}
        done = subprocess.run(
            ["git", "-C", str(self.path), "cat-file", "--batch-check"],
            input="".join(f"{s}\n" for s in shas).encode(),
            capture_output=True,
            env={**os.environ, **_ENV},
            check=False,
        )
        found: dict[str, int] = {}
        for line in done.stdout.decode().splitlines():
            parts = line.split()
            if len(parts) == 3:
                found[parts[0]] = int(parts[2])
        return found

    def last_commits(self, head: str, paths: Sequence[str]) -> dict[str, CommitInfo]:
        """The newest commit changing each path, walking history only until all are found."""
        wanted = set(paths)
        found: dict[str, CommitInfo] = {}
        if not wanted:
            return found
        # A shallow root (a clone's history cut there) lists every file as added: who
        # changed it last is unknown, so those files get no commit, not the cut's.
        cut = self.shallow_roots()
        fmt = "%x1e%H%x1f%an <%ae>%x1f%cI"
        current: CommitInfo | None = None
        args = ["log", "-z", "--name-only", "--no-renames", f"--format={fmt}", head, "--", *paths]
        for record in self._stream(*args):
            text = _text(record).lstrip("\n")
            if text.startswith("\x1e"):
                sha, author, when = text[1:].split("\x1f")
                current = CommitInfo(sha, author, datetime.fromisoformat(when))
            elif text and current is not None and text in wanted and text not in found:
                if current.sha in cut:
                    wanted.discard(text)
                    continue
                found[text] = current
                if len(found) == len(wanted):
                    break
        return found

    def shallow_roots(self) -> set[str]:
        """The commits where a shallow mirror's history is cut (none for a full one)."""
        try:
            return set((self.path / "shallow").read_text(encoding="ascii").split())
        except FileNotFoundError:
            return set()

    def blob(self, sha: str) -> bytes:
        """The content of the blob ``sha``."""
        return self._git("cat-file", "blob", sha)


def local_path(url: str) -> bool:
    """Whether git reads ``url`` as a local path, by git's own rule: not ``scheme://``,
    and not scp-like ``[user@]host:path`` (a ``:`` before any ``/``)."""
    if "://" in url:
        return False
    colon, slash = url.find(":"), url.find("/")
    return colon < 0 or 0 <= slash < colon


def resolve_url(url: str, root: Path | None) -> str:
    """``url`` with a relative local path resolved against ``root`` (the config's folder),
    as every other path in headwater.toml (the working directory without one); ``~`` is
    expanded. Left to git, it resolved against whichever directory git ran in: the
    caller's for ``validate``, the mirror's for ``sync``, so one said ok and the other
    failed."""
    if not local_path(url):
        return url
    path = Path(url).expanduser()
    return str(path if path.is_absolute() else (root or Path.cwd()) / path)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")
