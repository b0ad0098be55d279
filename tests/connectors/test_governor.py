"""The rate-limit governor across real processes sharing one manifest and one credential.

Two processes (``tests/governor_driver.py``) send through the governed transport to a
local rate-limited API (``fakes.ratelimited``, Notion's documented 429 behaviour) with
the same token: together they stay within the budget; a 429 one of them sees pauses the
other until its ``Retry-After``; and ``headwater status`` names the throttled sources.
On SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from declared import use_declared_connectors

from fakes.ratelimited import RateLimitedApi
from headwater import Workspace
from headwater.manifest.store import Manifest

TESTS = Path(__file__).resolve().parents[1]
DRIVER = TESTS / "governor_driver.py"
TOKEN = "secret_shared-integration-token"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    path = [str(TESTS.parent / "src"), str(TESTS)]
    env["PYTHONPATH"] = os.pathsep.join([*path, env.get("PYTHONPATH", "")])
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _wait_for(condition: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def api() -> Iterator[RateLimitedApi]:
    with RateLimitedApi(per_second=10) as fake:
        yield fake  # type: ignore[misc]


def _spawn(
    url: str, api: RateLimitedApi, source: str, rate: str, count: int, folder: Path
) -> subprocess.Popen[str]:
    args = [url, api.url, TOKEN, source, rate, str(count), str(folder)]
    return subprocess.Popen(
        [sys.executable, str(DRIVER), *args],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> None:
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err


def _results(folder: Path, source: str) -> list[dict[str, float]]:
    results: list[dict[str, float]] = json.loads((folder / f"{source}.json").read_text())
    return results


def test_two_processes_sharing_a_credential_stay_within_its_budget(
    manifest_url: str, api: RateLimitedApi, tmp_path: Path
) -> None:
    # the API allows 10 per second per token; each source is governed at 8/s, and their
    # budgets are one because the token is one: 24 requests take about three seconds
    a = _spawn(manifest_url, api, "a", "8/s", 12, tmp_path)
    b = _spawn(manifest_url, api, "b", "8/s", 12, tmp_path)
    _wait_for(lambda: all((tmp_path / f"{s}.ready").exists() for s in "ab"), "both ready")
    started = time.time()
    for s in "ab":
        (tmp_path / f"{s}.go").touch()
    _finish(a)
    _finish(b)
    statuses = [r["status"] for s in "ab" for r in _results(tmp_path, s)]
    assert statuses == [200] * 24, statuses  # no request was refused
    assert api.most_in_one_second() <= 10
    assert time.time() - started >= 23 / 8 - 0.1  # 24 evenly spaced starts at 8/s


def test_a_429_seen_by_one_process_pauses_the_other(
    manifest_url: str, api: RateLimitedApi, tmp_path: Path
) -> None:
    a = _spawn(manifest_url, api, "a", "-", 1, tmp_path)
    b = _spawn(manifest_url, api, "b", "-", 1, tmp_path)
    _wait_for(lambda: all((tmp_path / f"{s}.ready").exists() for s in "ab"), "both ready")
    api.block_next(2)  # a's request answers 429 with Retry-After: 2
    (tmp_path / "a.go").touch()
    _finish(a)
    assert [r["status"] for r in _results(tmp_path, "a")] == [429]
    refused_at = api.arrivals[0].at
    (tmp_path / "b.go").touch()  # b is ready and starts at once, but must wait
    _finish(b)
    assert [r["status"] for r in _results(tmp_path, "b")] == [200]
    second = api.arrivals[1]
    assert second.status == 200
    assert second.at - refused_at >= 2.0 - 0.05, second.at - refused_at


def test_status_shows_the_sources_of_a_throttled_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_declared_connectors(monkeypatch)  # the entry point pyproject.toml declares
    manifest_url = f"sqlite:///{tmp_path / 'manifest.db'}"  # PostgreSQL: the tests above
    with RateLimitedApi(per_second=1000) as fake:
        sources = "".join(
            f'[[source]]\nid = "{sid}"\ntype = "notion"\nbase_url = "{fake.url}"\n'
            f'token = "{TOKEN}"\nretry_attempts = 1\nrate_limit = "5/s"\n'
            "access = { public = true }\n"
            for sid in ("wiki", "handbook")
        )
        (tmp_path / "headwater.toml").write_text(
            '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
            f'[manifest]\nurl = "{manifest_url}"\n'
            '[embedder]\ntype = "fake"\ndimension = 32\n'
            '[[index]]\nname = "main"\ntype = "sqlite"\n' + sources
        )
        cli = [sys.executable, "-m", "headwater.cli"]

        def headwater(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*cli, *args], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                timeout=120,
            )  # fmt: skip

        with Workspace.open(tmp_path / "headwater.toml") as ws:
            ws.sync(["wiki"], index=False)  # reads with the token (whatever it finds)
        assert fake.arrivals and {a.status for a in fake.arrivals} == {200}
        fake.block_next(120)  # the next request answers 429 with Retry-After: 120
        waiting = subprocess.Popen(
            [*cli, "sync", "handbook", "--no-index"], cwd=tmp_path, env=_env(),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            _wait_for(lambda: any(a.status == 429 for a in fake.arrivals), "the 429")
            refused_at = next(a.at for a in fake.arrivals if a.status == 429)
            manifest = Manifest.open(manifest_url)
            try:  # the sync process writes the block right after the answer
                _wait_for(lambda: len(manifest.rates.throttled()) == 2, "the block")
            finally:
                manifest.close()
            report = headwater("status", "--json")  # while the sync waits out the block
            shown = headwater("status")
        finally:
            waiting.kill()
            waiting.wait()
        assert report.returncode == 0, report.stderr
        rows = {s["id"]: s for s in json.loads(report.stdout)["sources"]}
        for sid in ("wiki", "handbook"):  # one credential: both wait
            until = rows[sid]["throttled_until"]
            assert until is not None, rows[sid]
            left = datetime.fromisoformat(until).timestamp() - refused_at
            assert 119.5 < left <= 121, left  # from the answer's Retry-After
        assert "source handbook throttled until" in shown.stdout, shown.stdout
