"""Mutation pins: break one guard at a time and check that its named tests fail.

Each mutant (listed in ``scripts/mutant_list.py`` and ``mutant_list_access.py``) is a
named text patch (file, old text, new text) of one guard, plus the pytest node ids that
must kill it. For each mutant the script copies ``src/`` and ``tests/`` (and
``pyproject.toml``) to a temporary directory, applies that one patch there, runs the
killing tests with ``PYTHONPATH`` pointing at the copy, and reports ``killed`` (some
test failed), ``survived`` (all passed), ``timeout`` (the tests did not finish within
``--timeout``: a hang proves nothing about the guard, so it is not a kill),
``stale-patch`` (its old text is not found exactly once) or ``broken`` (pytest did not
run the tests to a failure: a collection or syntax error). It exits 1 unless every
mutant was killed.

    .venv/bin/python scripts/mutants.py            # every mutant
    .venv/bin/python scripts/mutants.py -k qdrant  # mutants whose name contains "qdrant"
    .venv/bin/python scripts/mutants.py --jobs 2   # two mutants at a time
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutant_list import MUTANTS, Mutant  # noqa: E402 - the list beside this script


def _copy_tree(workdir: Path) -> None:
    """src/, tests/ and pyproject.toml, with their bytecode (``_apply`` drops the patched
    file's): the copies keep their modification times, so the bytecode stays valid and each
    mutant's processes import the package without compiling it again."""
    for part in ("src", "tests"):
        shutil.copytree(ROOT / part, workdir / part)
    shutil.copy2(ROOT / "pyproject.toml", workdir / "pyproject.toml")


def _apply(workdir: Path, mutant: Mutant) -> str | None:
    """Apply the patch; return a problem, or None when it applied."""
    target = workdir / mutant.file
    if not target.exists():
        return f"{mutant.file} does not exist"
    text = target.read_text(encoding="utf-8")
    found = text.count(mutant.old)
    if found != 1:
        return f"its old text occurs {found} times in {mutant.file}; expected exactly once"
    for compiled in (target.parent / "__pycache__").glob(f"{target.stem}.*.pyc"):
        compiled.unlink()  # the patched source is compiled afresh, never read from a stale copy
    target.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
    return None


# Plugins that cost a pytest start about 1.5 s of CPU (the suite starts ~60) and that the
# killing tests use only where their modules name them: left out everywhere else.
HEAVY_PLUGINS = {"xdist": "xdist", "hypothesis": "hypothesispytest", "schemathesis": "schemathesis"}


def _unused_plugins(workdir: Path, mutant: Mutant) -> list[str]:
    """``-p no:NAME`` for each heavy plugin that no killing test's module mentions."""
    sources = "".join(
        (workdir / killer.split("::")[0]).read_text(encoding="utf-8")
        for killer in mutant.killers
        if (workdir / killer.split("::")[0]).is_file()
    )
    return [
        option
        for word, plugin in HEAVY_PLUGINS.items()
        if word not in sources
        for option in ("-p", f"no:{plugin}")
    ]


def run_mutant(mutant: Mutant, python: str, timeout: int) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.name}-") as tmp:
        workdir = Path(tmp)
        _copy_tree(workdir)
        problem = _apply(workdir, mutant)
        if problem is not None:
            return "stale-patch", problem
        env = {**os.environ, "PYTHONPATH": str(workdir / "src"), "HF_HUB_OFFLINE": "1"}
        env.pop("HEADWATER_FAILPOINTS", None)
        command = [python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
        command += _unused_plugins(workdir, mutant)
        command += [f"{n}" for n in mutant.killers]
        try:
            done = subprocess.run(
                command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return "timeout", f"the killing tests ran past {timeout} s (not a kill)"
        last = (done.stdout.strip().splitlines() or [""])[-1]
        if done.returncode == 0:
            return "survived", last
        if done.returncode != 1 or " failed" not in last:  # a collection error, no tests…
            return "broken", f"pytest exit {done.returncode}: {last}"
        failed = [
            line[7:].split(" - ")[0]
            for line in done.stdout.splitlines()
            if line.startswith("FAILED ")
        ]
        return "killed", last + (f" by {failed[0]}" if failed else "")


def _timed(mutant: Mutant, python: str, timeout: int) -> tuple[str, str, float]:
    """``run_mutant``'s verdict and detail, and the seconds it took."""
    started = time.monotonic()
    verdict, detail = run_mutant(mutant, python, timeout)
    return verdict, detail, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only mutants whose name contains this")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per mutant")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if args.k in m.name]
    if not chosen:
        print(f"no mutant name contains {args.k!r}; names: {', '.join(m.name for m in MUTANTS)}")
        return 1
    compileall.compile_dir(ROOT / "src", quiet=1)  # bytecode every mutant's copy reuses
    verdicts: dict[str, int] = {}
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # each runs a subprocess
        runs = [pool.submit(_timed, m, sys.executable, args.timeout) for m in chosen]
        for mutant, run in zip(chosen, runs, strict=True):
            verdict, detail, seconds = run.result()
            print(f"{verdict:12} {mutant.name} ({seconds:.1f} s): {detail}", flush=True)
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
    others = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()) if v != "killed")
    print(f"{verdicts.get('killed', 0)}/{len(chosen)} killed" + (f" ({others})" if others else ""))
    return 0 if verdicts.get("killed", 0) == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
