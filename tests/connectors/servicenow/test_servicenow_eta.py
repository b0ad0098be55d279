"""Issue 31 item 8: a sync whose source's API gives a total shows an ETA while it runs.

ServiceNow's Table API answers ``X-Total-Count`` with every page: the connector reports
it (``ExpectingTotal``), the runner saves it with the run's counts at each checkpoint,
and the CLI's progress line, ``status`` (CLI) and ``GET /v1/status`` show "expected" and
an ETA while the run lasts. A real ``headwater sync`` process is held at its third page
by the fake (the test opens the gate), so the running run is observed from outside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from servicenow_support import article, populate
from typer.testing import CliRunner

from fakes.confluence.server import Answer, Call
from fakes.servicenow import FakeServicenow
from headwater.api.app import create_app
from headwater.cli.app import register_commands
from headwater.sync.report import eta_seconds

SRC = str(Path(__file__).resolve().parents[3] / "src")


@pytest.mark.parametrize(
    ("seen", "expected", "elapsed", "eta"),
    [(250, 1000, 10.0, 30.0), (0, 1000, 10.0, None), (1000, 1000, 10.0, 0.0), (5, 4, 1.0, 0.0)],
)
def test_eta_is_the_rest_at_the_rate_so_far(
    seen: int, expected: int, elapsed: float, eta: float | None
) -> None:
    assert eta_seconds(seen, expected, elapsed) == eta


def config(sn: FakeServicenow, tmp_path: Path) -> Path:
    path = tmp_path / "headwater.toml"
    path.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "sn"\ntype = "servicenow"\nbase_url = "{sn.url}"\n'
        f'user = "{sn.user}"\npassword = "{sn.token}"\n'
        'knowledge_bases = ["IT", "HR"]\npage_size = 1\nbatch_size = 1\n'
        'window_overlap = "0s"\nretry_initial_wait = 0.0\nretry_max_wait = 0.0\n'
        'access = { groups = ["staff"] }\n'
    )
    return path


def status(path: Path) -> dict[str, object]:
    result = CliRunner().invoke(register_commands(), ["-c", str(path), "status", "--json"])
    assert result.exit_code == 0, result.output
    [source] = json.loads(result.stdout)["sources"]
    run: dict[str, object] = source["last_run"]
    return run


def test_a_running_sync_shows_expected_and_eta(sn: FakeServicenow, tmp_path: Path) -> None:
    populate(sn)
    sn.tables["kb_knowledge"] += [article(f"b{n}", "kb1", 10 + n) for n in range(6)]
    gate, held = threading.Event(), threading.Event()
    served = sn.answer

    def held_answer(call: Call) -> Answer:
        if call.path.endswith("/kb_knowledge") and call.query.get("sysparm_offset") == "3":
            held.set()
            gate.wait(60)
        return served(call)

    sn.answer = held_answer  # type: ignore[method-assign]
    path = config(sn, tmp_path)
    env = os.environ | {"PYTHONPATH": SRC, "HEADWATER_PROGRESS_INTERVAL": "0.1"}
    sync = subprocess.Popen(
        [sys.executable, "-m", "headwater", "-c", str(path), "sync", "sn", "--no-index"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert held.wait(60), "the sync never reached its fourth page"
        deadline = time.monotonic() + 30
        run = status(path)
        while run is None or run.get("expected") is None or run["counts"]["seen"] < 3:  # type: ignore[index]
            assert time.monotonic() < deadline, run
            time.sleep(0.05)
            run = status(path)
        assert run["status"] == "running" and run["expected"] == 10  # 4 + 6 published
        assert isinstance(run["eta_s"], float) and run["eta_s"] > 0
        shown = CliRunner().invoke(register_commands(), ["-c", str(path), "status"]).output
        assert "source sn syncing: 3 of 10 expected items seen, ETA" in shown
        with TestClient(create_app(path), base_url="http://127.0.0.1") as api:
            answer = api.get("/v1/status")
            assert answer.status_code == 200, answer.text
            [row] = answer.json()["sources"]
        assert row["last_run"]["expected"] == 10 and row["last_run"]["eta_s"] > 0
    finally:
        gate.set()
        _, err = sync.communicate(timeout=120)
    assert sync.returncode == 0, err
    assert ", 10 expected, ETA" in err  # the progress line while it ran
    done = status(path)
    assert done["status"] == "succeeded" and "expected" not in done
    assert done["counts"]["new"] == 10  # type: ignore[index]
