"""Every guard pinned in scripts/mutants.py is killed by its named tests."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_every_mutant_is_killed() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "mutants.py"), "--jobs", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "survived" not in done.stdout and "stale-patch" not in done.stdout


def mutants_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutants", ROOT / "scripts" / "mutants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutants"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_timeout_is_reported_as_such_not_as_a_kill(monkeypatch: pytest.MonkeyPatch) -> None:
    # A mutant whose tests hang was counted "killed": a hang proved the guard.
    script = mutants_script()
    hangs = script.Mutant(
        "hangs",
        "tests/correctness/test_mutants.py",
        "ROOT = Path(__file__).resolve().parents[2]\n",
        "ROOT = Path(__file__).resolve().parents[2]\n__import__('threading').Event().wait()\n",
        ("tests/correctness/test_mutants.py::test_a_timeout_is_reported_as_such_not_as_a_kill",),
    )
    verdict, detail = script.run_mutant(hangs, sys.executable, 5)
    assert verdict == "timeout" and "not a kill" in detail
    monkeypatch.setattr(script, "MUTANTS", [hangs])
    monkeypatch.setattr(script, "run_mutant", lambda *_args: (verdict, detail))
    assert script.main(["-k", "hangs"]) == 1


def test_every_mutant_patch_applies_exactly_once() -> None:
    # The full run above reports a moved guard as `stale-patch` only after minutes; this
    # says at once (and in the --fast tier) which mutant a refactor left behind.
    script = mutants_script()
    stale = [
        f"{m.name}: {m.file} holds its old text {(ROOT / m.file).read_text().count(m.old)} times"
        if (ROOT / m.file).is_file()
        else f"{m.name}: {m.file} does not exist"
        for m in script.MUTANTS
        if not (ROOT / m.file).is_file() or (ROOT / m.file).read_text().count(m.old) != 1
    ]
    assert not stale, "move each mutant with its guard:\n" + "\n".join(stale)
