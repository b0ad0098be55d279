"""Measure a child process from start to exit: wall time and its own peak RSS.

The idea: every benchmark phase (Headwater's CLI and the peer's scripts alike) runs as a
separate process, and what counts is what a user waits for: process start to exit,
imports and model loading included. ``os.wait4`` returns the resource usage of exactly
that child, so its ``ru_maxrss`` is the child's own peak resident set (Linux reports it in
KiB), not a maximum over earlier children as ``RUSAGE_CHILDREN`` would be. Standard library
only, so both virtual environments can import it.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Measured:
    command: list[str]
    returncode: int
    wall_s: float
    cpu_s: float  # the child's user + system CPU time
    peak_rss_mb: float
    load_before: float  # 1-minute load average when it started (others share the cores)
    load_after: float
    stdout: str
    stderr: str

    def last_json(self) -> dict[str, Any]:
        """The last stdout line that parses as a JSON object (scripts report there)."""
        for line in reversed(self.stdout.strip().splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    value = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    return value
        return {}

    def whole_json(self) -> dict[str, Any]:
        """stdout parsed as one JSON document (for ``--json`` reports), else {}."""
        try:
            value = json.loads(self.stdout)
        except json.JSONDecodeError:
            return self.last_json()
        return value if isinstance(value, dict) else {}


def run_measured(
    command: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> Measured:
    """Run ``command`` to completion; time it and read its own peak RSS."""
    full_env = dict(os.environ)
    # A relative PYTHONPATH (``PYTHONPATH=src``, or a before copy's ``bench/out/before/src``)
    # would be read from the child's cwd, where it names nothing: the child would import
    # the editable install's code instead, and a before/after pair would time one code
    # twice. Resolved here, against this process's cwd, as the caller meant it.
    if full_env.get("PYTHONPATH"):
        full_env["PYTHONPATH"] = os.pathsep.join(
            str(Path(part).resolve()) if part else part
            for part in full_env["PYTHONPATH"].split(os.pathsep)
        )
    full_env.setdefault("HF_HUB_OFFLINE", "1")
    full_env.setdefault("TOKENIZERS_PARALLELISM", "false")
    if env:
        full_env.update(env)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        proc = subprocess.Popen(list(command), cwd=cwd, env=full_env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        measured = Measured(
            command=list(command),
            returncode=proc.returncode,
            wall_s=round(wall, 3),
            cpu_s=round(usage.ru_utime + usage.ru_stime, 3),
            peak_rss_mb=round(usage.ru_maxrss / 1024, 1),
            load_before=round(load_before, 2),
            load_after=round(os.getloadavg()[0], 2),
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
        )
    if check and measured.returncode != 0:
        tail = measured.stderr.strip().splitlines()[-15:]
        raise RuntimeError(f"{' '.join(command)} exited {measured.returncode}:\n" + "\n".join(tail))
    return measured


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        if value is None:
            return "—"
        if isinstance(value, float):
            return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
