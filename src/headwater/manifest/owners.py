"""Who holds a lease: one identity per process instance, and when it is provably gone.

An owner reads ``HOST:PID:INSTANCE:TOKEN``: the host name and process id an operator
recognizes, ``INSTANCE`` = ``BOOT.PIDNS.START`` (the first 8 hex digits of the kernel's
boot id, the inode of the process's PID namespace, its start time in clock ticks since
boot) and 8 random hex digits. Two containers on one host whose processes are both
``pid 1`` get different owners (other PID namespaces, start times and tokens), and a
forked child gets its own.

An owner is *provably dead* only when seen from the same host, boot and PID namespace
(through a ``/proc`` of that namespace): its pid runs no process, or a process that
started at another time (the pid was reused). Anything else (another host, another
container, an owner written before this format as ``HOST:PID``, an unreadable ``/proc``)
proves nothing, and such a lease is taken over only once it expired.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path

UNKNOWN = "?"
_OWNERS: dict[int, str] = {}  # pid -> owner: computed once per process (and per fork)


def _host() -> str:
    return socket.gethostname()[:100].replace(":", "_") or "localhost"


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def start_ticks(pid: int | str) -> str | None:
    """Field 22 of ``/proc/PID/stat``: when the process started, in ticks since boot."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    fields = stat.rpartition(")")[2].split()  # the name in parentheses may hold spaces
    return fields[19] if len(fields) > 19 else None


def _boot() -> str:
    boot = _read("/proc/sys/kernel/random/boot_id")
    return boot.replace("-", "")[:8] if boot else UNKNOWN


def _pid_namespace() -> str:
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return UNKNOWN
    inode = link.partition("[")[2].rstrip("]")
    return inode if inode.isdigit() else UNKNOWN


def _instance() -> str:
    return ".".join((_boot(), _pid_namespace(), start_ticks("self") or UNKNOWN))


def lease_owner() -> str:
    """This process's owner string (stable for the process, new in a forked child)."""
    pid = os.getpid()
    if pid not in _OWNERS:
        _OWNERS[pid] = f"{_host()}:{pid}:{_instance()}:{secrets.token_hex(4)}"
    return _OWNERS[pid]


def owner_pid(owner: str) -> int | None:
    """The pid of ``owner`` when it is a process of this host and PID namespace."""
    parts = owner.split(":")
    if len(parts) != 4 or parts[0] != _host() or not parts[1].isdigit():
        return None
    boot, _, rest = parts[2].partition(".")
    namespace = rest.partition(".")[0]
    if UNKNOWN in (boot, namespace) or (boot, namespace) != (_boot(), _pid_namespace()):
        return None
    return int(parts[1])


def _proc_is_ours() -> bool:
    """Whether ``/proc`` shows this PID namespace (``unshare --pid`` without
    ``--mount-proc`` leaves the parent's: its pids are not ours)."""
    try:
        return os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


def owner_is_dead(owner: str) -> bool:
    """True only when ``owner`` is provably gone (see the module's docstring)."""
    pid = owner_pid(owner)
    if pid is None or not _proc_is_ours():
        return False
    started = owner.split(":")[2].rpartition(".")[2]
    if started == UNKNOWN:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # a live process of another user: compare its start time
    now = start_ticks(pid)
    return now is not None and now != started
