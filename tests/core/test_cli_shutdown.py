"""The CLI leaves without Python's teardown, but only when nothing depends on it.

A real ``headwater`` process (``runpy``, as ``python -m headwater``) whose ``__main__``
holds an object with a ``__del__``: the normal teardown would run it, the fast exit
does not; ``atexit`` handlers still run, and the exit status is the command's. The
services (``serve``, ``worker``, ``run``) always end the normal way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from headwater.cli.app import LONG_RUNNING, command_name

PROBE = """\
import atexit, runpy, sys
marks = sys.argv.pop(1)
class Teardown:  # holds what its __del__ needs: module globals are cleared first
    def __init__(self, path, opener):
        self.path, self.opener = path, opener
    def __del__(self):
        self.opener(self.path, "w").close()
keep = Teardown(marks + ".teardown", open)
atexit.register(lambda: open(marks + ".atexit", "w").close())
sys.argv[0] = "headwater"
runpy.run_module("headwater", run_name="__main__", alter_sys=True)
"""


def run_probe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "mark"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_finished_command_skips_teardown_but_runs_atexit(tmp_path: Path) -> None:
    done = run_probe(tmp_path, "init", "ws")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ws" / "headwater.toml").is_file()
    assert (tmp_path / "mark.atexit").exists()
    assert not (tmp_path / "mark.teardown").exists()


def test_the_exit_status_is_kept(tmp_path: Path) -> None:
    done = run_probe(tmp_path, "doc", "show", "nope", "-c", str(tmp_path / "missing.toml"))
    assert done.returncode == 2, done.stderr
    assert "error:" in done.stderr and (tmp_path / "mark.atexit").exists()


def test_a_running_thread_keeps_the_normal_exit() -> None:
    probe = (
        "import threading, time\n"
        "from headwater.cli.shutdown import exit_now\n"
        "threading.Thread(target=time.sleep, args=(0.2,)).start()\n"
        "exit_now(3)\n"
        "print('normal exit')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "normal exit", done.stderr


def test_services_are_recognized_behind_global_options() -> None:
    assert command_name(["-c", "ws/headwater.toml", "-v", "search", "q"]) == "search"
    assert command_name(["--log-file", "x.log", "--log-format=json", "serve"]) == "serve"
    assert command_name(["--version"]) is None and command_name([]) is None
    assert {"serve", "worker", "run"} <= set(LONG_RUNNING)
