"""Who holds a SQLite manifest's write lock: the report of a writer that waited too long.

In WAL mode a writer holds a POSIX lock on byte 120 of the ``-shm`` file (SQLite's
``WAL_WRITE_LOCK``) for the whole write transaction. ``/proc/locks`` lists that lock with
the holder's pid (in this PID namespace), without opening the file: opening and closing
it here would drop this process's own SQLite locks on it (POSIX locks are per process).
The pid is matched to the lease it holds in the manifest (read without the write lock),
so the report names the process, its state (``stopped`` after SIGSTOP), its command line
and the source it syncs. Linux only; elsewhere the report says the holder is unknown.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime
from pathlib import Path

from headwater.manifest.owners import owner_pid

WAL_WRITE_LOCK_BYTE = 120
_STATES = {"T": "stopped", "t": "stopped by a debugger", "Z": "a zombie", "D": "in disk wait"}


def write_lock_pid(database: str) -> int | None:
    """The pid holding the write lock of the WAL database ``database``, if listed."""
    try:
        shm = os.stat(f"{database}-shm")
        locks = Path("/proc/locks").read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None
    device = f"{os.major(shm.st_dev):02x}:{os.minor(shm.st_dev):02x}:{shm.st_ino}"
    for line in locks.splitlines():
        # "7: POSIX  ADVISORY  WRITE 4242 00:2d:1234 120 120" ("->" marks a waiter)
        fields = line.split()
        if len(fields) != 8 or fields[1] != "POSIX" or fields[3] != "WRITE":
            continue
        if fields[5] != device or not fields[4].isdigit():
            continue
        start, end = fields[6], fields[7]
        last = WAL_WRITE_LOCK_BYTE if end == "EOF" else int(end)
        if int(start) <= WAL_WRITE_LOCK_BYTE <= last and int(fields[4]) > 0:
            return int(fields[4])
    return None


def _process(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, UnicodeDecodeError):
        return f"process {pid}"
    state = stat.rpartition(")")[2].split()[0]
    command = " ".join(a.decode(errors="replace") for a in argv if a)[:160]
    return f"process {pid} ({_STATES.get(state, 'running')}: {command})"


def _leases_of(database: str, pid: int) -> list[str]:
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as conn:
            rows = conn.execute(
                "SELECT source_id, owner, expires_at FROM leases WHERE released = 0"
            ).fetchall()
    except sqlite3.Error:
        return []
    return [
        f"it is lease owner {owner} of source {source!r} (lease until {expires})"
        for source, owner, expires in rows
        if owner_pid(str(owner)) == pid
    ]


def write_lock_report(database: str, waited_from: datetime) -> str:
    """Why a write transaction on ``database`` could not start, and what to do."""
    pid = write_lock_pid(database)
    since = waited_from.isoformat(timespec="seconds")
    if pid is None:
        who = "another process (not listed in /proc/locks)"
        fix = "Find it with `fuser` or `lsof` on the file, and let it finish or stop it."
    elif pid == os.getpid():
        who = "this process itself (another of its connections)"
        fix = "This is a bug: report it with the traceback (-v)."
    else:
        who = _process(pid)
        fix = (
            f"If it is stopped, continue it (`kill -CONT {pid}`) or end it: SQLite cannot "
            "take a write lock from a live process."
        )
    leases = "".join(f"; {lease}" for lease in _leases_of(database, pid)) if pid else ""
    return (
        f"the SQLite manifest {database} is busy: {who} holds its write lock, since at "
        f"least {since} (when this process began waiting){leases}. {fix} A PostgreSQL "
        "manifest ([manifest] url) takes a frozen owner's lease over within a bounded "
        "time instead (docs/guarantees.md#fencing)."
    )
