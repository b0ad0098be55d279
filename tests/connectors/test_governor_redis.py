"""The rate-limit governor's budgets in the real Redis at 127.0.0.1:6379.

The Lua scripts decide exactly as the pure ``ratelimit.reserve`` and ``ratelimit.block``
(compared on one clock over a random sequence); two real processes
(``tests/governor_driver.py``) sharing one credential through Redis stay within its
budget, and a 429 one of them sees pauses the other until its ``Retry-After``; the
config chooses the store (``[ratelimit]``, or a Celery broker at redis://) and
``headwater status`` (CLI and API) names the throttled sources. Every test has its own
key prefix.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from fakes.ratelimited import RateLimitedApi
from headwater import Workspace
from headwater.api.app import create_app
from headwater.cli.app import register_commands
from headwater.errors import ConfigError, TransientError
from headwater.manifest.throttles import RateLedger
from headwater.ratelimit import Rate, block, credential_key, reserve
from headwater.ratelimit_redis import RedisRateLedger
from pg_support import create_pg_database

REDIS = "redis://127.0.0.1:6379/0"
TESTS = Path(__file__).resolve().parents[1]
DRIVER = TESTS / "governor_driver.py"
TOKEN = "secret_shared-integration-token"


@pytest.fixture
def prefix() -> Iterator[str]:
    """A key prefix of this test's own; its keys are deleted after."""
    name = f"hw-test:{uuid.uuid4().hex}:"
    yield name
    client = redis.Redis.from_url(REDIS)
    keys = list(client.scan_iter(f"{name}*"))
    if keys:
        client.delete(*keys)
    client.close()


def test_the_scripts_decide_as_the_pure_functions(prefix: str) -> None:
    clock = [1_000_000.0]
    store = RedisRateLedger(REDIS, prefix=prefix, clock=lambda: clock[0])
    rates = [Rate(5, 1), Rate(100, 3600)]
    tats: dict[int, float] = {}
    blocked = 0.0
    rng = random.Random(7)
    for step in range(300):
        clock[0] += rng.choice([0.0, 0.01, 0.1, 0.5, 2.0])
        if step % 50 == 49:
            seconds = rng.choice([0.5, 3.0])
            blocked = max(blocked, clock[0] + seconds)
            tats = block(tats, blocked, rates)
            store.block("k", "notion", seconds, "429", rates)
        else:
            expected = reserve(tats, blocked, rates, clock[0])
            tats = dict(expected.tats)
            wait = store.reserve("k", "notion", rates)
            assert wait == pytest.approx(max(0.0, expected.start - clock[0]), abs=1e-5), step
        stored, until = store.state("k")
        assert until == pytest.approx(blocked, abs=1e-5)
        assert stored == pytest.approx(tats, abs=1e-5)
    ttl = redis.Redis.from_url(REDIS).ttl(f"{prefix}cred:k")
    ahead = max([*tats.values(), blocked]) - clock[0]  # the quota's state still ahead
    assert ahead > 3600 and abs(ttl - (2 * 86_400 + ahead)) <= 3
    store.close()


def test_the_server_clock_is_used_and_a_block_is_reported(prefix: str) -> None:
    store = RedisRateLedger(REDIS, prefix=prefix, tenant="acme")
    store.register("wiki", "k")
    assert store.reserve("k", "notion", [Rate(2, 1)]) == 0.0
    assert 0.3 < store.reserve("k", "notion", [Rate(2, 1)]) <= 0.5  # the bucket's interval
    store.block("k", "notion", 30.0, "HTTP 429", [Rate(2, 1)])
    [(source, shown)] = store.throttled().items()
    assert source == "wiki" and shown.reason == "HTTP 429"
    assert 29.0 < shown.until.timestamp() - time.time() <= 31.0
    assert 29.0 < store.reserve("k", "notion", [Rate(2, 1)]) <= 30.6
    other = RedisRateLedger(REDIS, prefix=prefix, tenant="other")
    assert other.throttled() == {}  # another workspace's sources are its own
    store.close()
    other.close()


def test_an_unreachable_redis_is_transient_and_hides_the_password() -> None:
    store = RedisRateLedger("redis://:s3cret@127.0.0.1:1/0", prefix="x:")
    with pytest.raises(TransientError) as caught:
        store.reserve("k", "notion", [Rate(1, 1)])
    assert "s3cret" not in str(caught.value) and "redis://:***@127.0.0.1:1/0" in str(caught.value)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent / "src"), str(TESTS)])
    return env


def _spawn(
    prefix: str, api: RateLimitedApi, source: str, rate: str, count: int, folder: Path
) -> subprocess.Popen[str]:
    args = [f"{REDIS}#{prefix}", api.url, TOKEN, source, rate, str(count), str(folder)]
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


def _wait_for(condition: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _results(folder: Path, source: str) -> list[dict[str, float]]:
    results: list[dict[str, float]] = json.loads((folder / f"{source}.json").read_text())
    return results


def test_two_processes_share_one_budget_in_redis(prefix: str, tmp_path: Path) -> None:
    with RateLimitedApi(per_second=10) as api:
        a = _spawn(prefix, api, "a", "8/s", 12, tmp_path)
        b = _spawn(prefix, api, "b", "8/s", 12, tmp_path)
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
    tats, _ = RedisRateLedger(REDIS, prefix=prefix).state(credential_key(TOKEN))
    assert set(tats) == {1}  # the budget was in Redis


def test_a_429_in_one_process_pauses_the_other_through_redis(prefix: str, tmp_path: Path) -> None:
    with RateLimitedApi(per_second=10) as api:
        a = _spawn(prefix, api, "a", "-", 1, tmp_path)
        b = _spawn(prefix, api, "b", "-", 1, tmp_path)
        _wait_for(lambda: all((tmp_path / f"{s}.ready").exists() for s in "ab"), "both ready")
        api.block_next(2)  # a's request answers 429 with Retry-After: 2
        (tmp_path / "a.go").touch()
        _finish(a)
        assert [r["status"] for r in _results(tmp_path, "a")] == [429]
        refused_at = api.arrivals[0].at
        (tmp_path / "b.go").touch()  # b starts at once, but must wait out a's block
        _finish(b)
        assert [r["status"] for r in _results(tmp_path, "b")] == [200]
        assert api.arrivals[1].at - refused_at >= 2.0 - 0.05


def _config(tmp_path: Path, api_url: str, extra: str) -> Path:
    sources = "".join(
        f'[[source]]\nid = "{sid}"\ntype = "notion"\nbase_url = "{api_url}"\n'
        f'token = "{TOKEN}"\nretry_attempts = 1\nrate_limit = "5/s"\n'
        "access = { public = true }\n"
        for sid in ("wiki", "handbook")
    )
    path = tmp_path / "headwater.toml"
    path.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n' + extra + sources
    )
    return path


def test_the_config_chooses_the_store_and_status_shows_a_block(prefix: str, tmp_path: Path) -> None:
    with RateLimitedApi(per_second=1000) as api:
        redis_store = f'[ratelimit]\nstore = "redis"\nurl = "{REDIS}"\nkey_prefix = "{prefix}"\n'
        path = _config(tmp_path, api.url, redis_store)
        with Workspace.open(path) as ws:
            ws.sync(["wiki"], index=False)
            assert isinstance(ws.runtime.rate_store, RedisRateLedger)
        api.block_next(120)  # the next request answers 429 with Retry-After: 120
        waiting = subprocess.Popen(
            [sys.executable, "-m", "headwater", "-c", str(path), "sync", "handbook", "--no-index"],
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:  # the sync process writes the block right after the answer, then waits
            store = RedisRateLedger(REDIS, prefix=prefix, tenant="acme")
            _wait_for(lambda: len(store.throttled()) == 2, "the block in Redis")
            store.close()
            shown = CliRunner().invoke(register_commands(), ["-c", str(path), "status", "--json"])
            assert shown.exit_code == 0, shown.output
            with TestClient(create_app(path), base_url="http://127.0.0.1") as client:
                body = client.get("/v1/status").json()
        finally:
            waiting.kill()
            waiting.wait()
        rows = {s["id"]: s for s in json.loads(shown.stdout)["sources"]}
        assert rows["wiki"]["throttled_until"] and rows["handbook"]["throttled_until"]
        assert all(s["throttled_until"] for s in body["sources"])
        with Workspace.open(path) as ws:  # the manifest holds no budget
            assert RateLedger(ws.manifest.engine).throttled() == {}
    with pytest.raises(ConfigError, match=r'store = "redis" but no Redis URL'):
        Workspace.open(_config(tmp_path, "http://127.0.0.1:1", '[ratelimit]\nstore = "redis"\n'))
    bad = '[ratelimit]\nurl = "http://127.0.0.1:6379"\n'
    with pytest.raises(ConfigError, match="is not a Redis URL"):
        Workspace.open(_config(tmp_path, "http://127.0.0.1:1", bad))


def test_a_celery_broker_at_redis_holds_the_budgets_by_default(
    prefix: str, tmp_path: Path, postgres_server_url: str
) -> None:
    manifest_url, drop = create_pg_database(postgres_server_url)
    try:
        celery = f'[manifest]\nurl = "{manifest_url}"\n'
        celery += f'[executor]\ntype = "celery"\nbroker_url = "{REDIS}"\n'
        celery += f'[ratelimit]\nkey_prefix = "{prefix}"\n'
        with Workspace.open(_config(tmp_path, "http://127.0.0.1:1", celery)) as ws:
            assert isinstance(ws.runtime.rate_store, RedisRateLedger)
        kept = celery + 'store = "manifest"\n'
        with Workspace.open(_config(tmp_path, "http://127.0.0.1:1", kept)) as ws:
            assert isinstance(ws.runtime.rate_store, RateLedger)
    finally:
        drop()
