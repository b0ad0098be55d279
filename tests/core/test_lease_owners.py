"""Lease owners: one per process instance, and declared dead only when provably gone.

An owner is ``HOST:PID:BOOT.PIDNS.START:TOKEN``. Only an owner of this host, boot and
PID namespace whose pid runs nothing, or runs a process started at another time (a
reused pid), is dead; another namespace, another host or a legacy ``HOST:PID`` owner
proves nothing (its lease is taken over once it expired, never before).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from headwater.manifest.owners import lease_owner, owner_is_dead, owner_pid


def _with(owner: str, *, pid: int | None = None, part: int | None = None, value: str = "") -> str:
    host, own_pid, instance, token = owner.split(":")
    fields = instance.split(".")
    if part is not None:
        fields[part] = value
    return ":".join((host, str(pid or own_pid), ".".join(fields), token))


def _gone_pid() -> int:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    return int(child.stdout)


def test_an_owner_is_one_process_instance() -> None:
    mine = lease_owner()
    assert mine == lease_owner()
    assert owner_pid(mine) == os.getpid()
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "from headwater.manifest.owners import lease_owner; print(lease_owner())",
        ],
        text=True,
        capture_output=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")},
    ).stdout.strip()
    assert child != mine and owner_pid(child) not in (None, os.getpid())
    assert not owner_is_dead(mine)


def test_only_a_provably_gone_owner_is_dead() -> None:
    mine, gone = lease_owner(), _gone_pid()
    assert owner_is_dead(_with(mine, pid=gone))  # its pid runs nothing
    assert owner_is_dead(_with(mine, part=2, value="1"))  # its pid runs a later process
    # Nothing proven: another PID namespace (a container), boot or host; an unknown
    # start; the owner format of earlier versions.
    assert not owner_is_dead(_with(mine, pid=gone, part=1, value="4026500000"))
    assert not owner_is_dead(_with(mine, pid=gone, part=0, value="0badb007"))
    assert not owner_is_dead(_with(mine, part=2, value="?"))
    assert not owner_is_dead("another-host" + _with(mine, pid=gone)[mine.index(":") :])
    assert not owner_is_dead(f"{mine.split(':')[0]}:{gone}")
