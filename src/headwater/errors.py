"""Every error Headwater raises, grouped by what the caller does about it.

- ``TransientError``: retry with backoff (timeouts, resets, HTTP 429/5xx, lock timeouts).
- ``ItemError``: this one document is bad; record a failure and go on.
- ``FatalError``: stop the run (the connector itself broke, a sink is unusable, the
  run's lease was taken over: ``LeaseLost``).
- ``ConfigError``: the user must fix configuration; exit code 2.

Messages name the value, what was expected and the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_USAGE = 2
EXIT_NEEDS_PERSON = 3  # done, but a person must look (a blocked prune, index drift)
EXIT_BUSY = 75  # done, but a source was skipped: another process held it (EX_TEMPFAIL)
EXIT_CANCELLED = 130  # Ctrl-C: the run stopped after its current batch


class HeadwaterError(Exception):
    """Base of every Headwater error."""

    exit_code = EXIT_RUN_FAILED


class TransientError(HeadwaterError):
    """A passing fault: the same call may succeed later. Retried with backoff."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BrokerUnavailable(TransientError):
    """The Celery broker refused a message (down, unreachable, wrong URL); nothing was
    enqueued and no queued marker is left behind."""


class ItemError(HeadwaterError):
    """One document cannot be processed. Becomes a failure record; the run goes on.

    ``error_class`` is a short stable name (``too_large``, ``parse_error``…);
    ``permanent`` items go to the dead-letter queue at once.
    """

    def __init__(self, error_class: str, message: str, *, permanent: bool = True) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.permanent = permanent


class FatalError(HeadwaterError):
    """The run cannot go on (the connector raised, a sink or the manifest is unusable)."""


class ManifestDamaged(FatalError):
    """The manifest cannot be read back (a SQLite file that is not a database or holds a
    malformed page; a PostgreSQL page, index or relation file the server cannot read):
    the run stops, recording this message rather than the statement that met the damage."""


class ListingCapped(FatalError):
    """A listing stopped at a cap the config sets (the web connector's ``max_pages``).

    Incomplete by configuration, not by a fault: nothing is deleted, and a sync records
    no failure for it; its report says so (``"deletes": "capped"`` with a ``note``)."""


class ContentMissing(FatalError):
    """A stored normalized text is not in the content store.

    Fatal when the manifest still points at it (the state dir was changed by hand); the
    indexer skips a document whose record moved on to new content meanwhile (housekeeping
    may collect the old object), and indexes its new revision in a later drain."""


class LeaseLost(FatalError):
    """Another process took this source's lease over: this run must stop, committing nothing.

    Raised by a heartbeat that finds the lease gone and by every fenced commit whose lease
    epoch no longer matches; the transaction that raised it rolled back.
    """


class SourceBusy(FatalError):
    """The source's lease is held by another live process (``holder``, until ``until``):
    this process must not run it now. ``headwater sync`` reports it as skipped."""

    def __init__(self, message: str, *, source_id: str, holder: str, until: datetime) -> None:
        super().__init__(message)
        self.source_id = source_id
        self.holder = holder
        self.until = until


class ConfigError(HeadwaterError):
    """Configuration is wrong; ``problems`` lists every problem found, each with its path."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        self.problems = list(problems) or [message]
        super().__init__(message)

    def __str__(self) -> str:
        if len(self.problems) <= 1:
            return self.problems[0] if self.problems else super().__str__()
        head = f"{len(self.problems)} configuration problems:"
        return "\n".join([head, *(f"  - {p}" for p in self.problems)])


class IndexOwnedElsewhere(ConfigError):
    """An index is bound to another manifest than the workspace's (a wrong ``[manifest]
    url``, an index path shared by two workspaces). Nothing was changed; the operator
    fixes the url, or adopts or resets the index (``headwater reconcile --adopt|--reset``)."""


class CredentialError(ConfigError):
    """The source refused our credentials or permissions (401/403)."""


class NotFoundError(HeadwaterError):
    """A named thing (document, run, DLQ entry) does not exist. Exit code 2."""

    exit_code = EXIT_USAGE


class Cancelled(HeadwaterError):
    """The user asked to stop (Ctrl-C); the run stopped after its current batch."""

    exit_code = EXIT_CANCELLED


class WriteConflict(TransientError):
    """A manifest batch was decided from rows another writer changed since they were read
    (a conditional update matched no row, or a concurrent insert of the same document);
    the transaction rolled back and wrote nothing. Read again and decide again."""


class PushConflict(HeadwaterError):
    """A pushed operation refused for its version, or a push to a source that is not a
    ``push`` source (HTTP 409); ``current`` is the version the manifest holds."""

    def __init__(self, message: str, current: int | None = None) -> None:
        super().__init__(message)
        self.current = current


def error_class_of(exc: BaseException) -> str:
    """A short stable name for an exception, used in failure records."""
    if isinstance(exc, ItemError):
        return exc.error_class
    if isinstance(exc, TransientError):
        return "transient"
    return type(exc).__name__
