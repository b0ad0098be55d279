"""Named crash points for crash tests, enabled only by an environment variable.

``HEADWATER_FAILPOINTS=after_manifest_commit,between_sinks`` makes the process kill
itself with SIGKILL the first time it reaches one of those points, exactly as a power
cut or OOM kill would. ``name:stop`` stops it with SIGSTOP instead, the first time only,
so a test can act from another process meanwhile and SIGCONT it (a paused process: a GC
pause, a frozen VM). ``name:transient`` raises ``TransientError`` there each time it is
reached, ``name:transientN`` the first N times only (a passing fault: a retry follows);
``name:sleepS`` sleeps S seconds there each time (a slow step; other threads go on).
Unset (always, outside tests), a failpoint costs one dict lookup.
"""

from __future__ import annotations

import os
import signal
import time

from headwater.errors import TransientError

ENV_VAR = "HEADWATER_FAILPOINTS"

AFTER_FETCH_BEFORE_COMMIT = "after_fetch_before_commit"
AFTER_MANIFEST_COMMIT = "after_manifest_commit"
BETWEEN_SINKS = "between_sinks"
AFTER_SINK_WRITE_BEFORE_RECORD = "after_sink_write_before_record"
MID_DELETE = "mid_delete"
AFTER_CHECKPOINT_SAVE = "after_checkpoint_save"
AFTER_INDEX_BATCH = "after_index_batch"  # every sink of one indexer batch recorded
INSIDE_BATCH_COMMIT = "inside_batch_commit"  # the batch's transaction fenced, not committed
AFTER_EVENTS_PUBLISHED = "after_events_published"  # events confirmed, not removed from the outbox
BEFORE_QUEUED_RUN = "before_queued_run"  # a NATS worker took a run message, runs nothing yet
IN_SEARCH = "in_search"  # a search checked its request, reads nothing yet (on its thread)

ALL = (
    AFTER_FETCH_BEFORE_COMMIT,
    AFTER_MANIFEST_COMMIT,
    BETWEEN_SINKS,
    AFTER_SINK_WRITE_BEFORE_RECORD,
    MID_DELETE,
    AFTER_CHECKPOINT_SAVE,
    AFTER_INDEX_BATCH,
    INSIDE_BATCH_COMMIT,
)
# Reached only with an [events] table, so not among the points every sync passes (ALL,
# the crash matrix); tests/events kill a sync there.
EVENTS = (AFTER_EVENTS_PUBLISHED,)

STOP = "stop"
TRANSIENT = "transient"
SLEEP = "sleep"

_ACTIVE = dict(
    (p.strip().partition(":")[0], p.strip().partition(":")[2])
    for p in os.environ.get(ENV_VAR, "").split(",")
    if p.strip()
)
_stopped: set[str] = set()
_raised: dict[str, int] = {}


def failpoint(name: str) -> None:
    """Die here, hard, if ``name`` is enabled (``name:stop``: stop here, once;
    ``name:transient[N]``: raise ``TransientError``; ``name:sleepS``: sleep)."""
    action = _ACTIVE.get(name)
    if action is None:
        return
    if action.startswith(TRANSIENT):
        limit = int(action[len(TRANSIENT) :] or 0)
        _raised[name] = _raised.get(name, 0) + 1
        if not limit or _raised[name] <= limit:
            raise TransientError(f"failpoint {name} (attempt {_raised[name]}): a passing fault")
    elif action.startswith(SLEEP):
        time.sleep(float(action[len(SLEEP) :] or 1))
    elif action != STOP:
        os.kill(os.getpid(), signal.SIGKILL)
    elif name not in _stopped:
        _stopped.add(name)
        os.kill(os.getpid(), signal.SIGSTOP)
