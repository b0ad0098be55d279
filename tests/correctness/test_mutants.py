"""Every guard pinned in scripts/mutants.py is killed by its named tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_every_mutant_is_killed() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "mutants.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "survived" not in done.stdout and "stale-patch" not in done.stdout
