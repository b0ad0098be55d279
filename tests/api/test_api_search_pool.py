"""At most ``[api] search_threads`` searches of a worker run at once; the rest wait their
turn in arrival order (``api/search_pool.py``).

The pool alone: six searches on two slots, released one by one, start in the order they
came; with no threads (``search_threads = 0``, what ``auto`` picks when every search is
CPU work in the worker's own process) four searches run one at a time on the event
loop's own thread, in the order they came, the loop reading what arrived between two; and a
search request of such a worker never leaves the loop's thread (its key check included). A
real ``headwater serve`` with ``search_threads = 3`` and every search held 3 s at
the ``in_search`` failpoint: five searches sent together show 3 running and 2 waiting in
``/metrics``, never more running, and all five answer.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from api_support import KEYS, Server, make_workspace, wait_for
from fastapi.testclient import TestClient
from test_api_metrics_logs import samples

from headwater.api.app import create_app
from headwater.api.search_pool import SearchPool, threads_for
from headwater.config import HeadwaterConfig
from headwater.failpoints import ENV_VAR, IN_SEARCH
from ports import free_port


def test_two_slots_and_the_rest_in_arrival_order() -> None:
    pool = SearchPool(2)
    started: list[int] = []
    release = [threading.Event() for _ in range(6)]

    def search(number: int) -> int:
        started.append(number)
        assert release[number].wait(10)
        return number * 10

    async def until(check: object) -> None:
        deadline = time.monotonic() + 10
        while not check():  # type: ignore[operator]
            assert time.monotonic() < deadline, "condition not met in time"
            await anyio.sleep(0.005)

    async def scenario() -> list[int]:
        answers: list[int] = []

        async def one(number: int) -> None:
            answers.append(await pool.run(search, number))

        async with anyio.create_task_group() as tasks:
            for number in range(6):
                tasks.start_soon(one, number)
                await until(lambda n=number: pool.running() + pool.waiting() == n + 1)
            await until(lambda: len(started) == 2)
            assert (pool.running(), pool.waiting()) == (2, 4)
            for number in range(6):
                release[number].set()
                await until(lambda n=number: len(answers) == n + 1)
                # the next in line starts on its thread once the slot is free
                await until(lambda n=number: len(started) == min(6, n + 3))
                assert started == list(range(min(6, number + 3)))
                assert pool.running() <= 2
        return answers

    assert sorted(anyio.run(scenario)) == [0, 10, 20, 30, 40, 50]
    assert (pool.running(), pool.waiting()) == (0, 0)


def test_no_threads_one_search_at_a_time_on_the_loop_in_arrival_order() -> None:
    pool = SearchPool(0)
    log: list[str] = []
    gauges: list[tuple[int, int]] = []

    async def scenario() -> list[int]:
        loop_thread = threading.get_ident()
        loop = asyncio.get_running_loop()

        def search(number: int) -> int:
            assert threading.get_ident() == loop_thread
            gauges.append((pool.running(), pool.waiting()))
            log.append(f"search {number}")
            # what the loop has to do meanwhile (a request read) comes before the next search
            loop.call_soon(log.append, f"read after {number}")
            return number * 10

        answers: list[int] = []

        async def one(number: int) -> None:
            answers.append(await pool.run(search, number))

        async with anyio.create_task_group() as tasks:
            for number in range(4):
                tasks.start_soon(one, number)
        return answers

    assert anyio.run(scenario) == [0, 10, 20, 30]
    assert log == [f"{what} {n}" for n in range(4) for what in ("search", "read after")]
    assert gauges == [(1, 3), (1, 2), (1, 1), (1, 0)]
    assert (pool.running(), pool.waiting()) == (0, 0)


def test_no_threads_a_search_request_never_leaves_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for role, key in KEYS.items():
        monkeypatch.setenv(f"HW_{role.upper()}_KEY", key)
    config = make_workspace(tmp_path, extra="\n[api]\nsearch_threads = 0\n")
    hops: list[object] = []
    real_run_sync = anyio.to_thread.run_sync

    async def counted(func: object, *args: object, **kwargs: object) -> object:
        hops.append(func)
        return await real_run_sync(func, *args, **kwargs)  # type: ignore[arg-type]

    with TestClient(create_app(config)) as client:
        monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
        answer = client.post(
            "/v1/search",
            json={"query": "vacation days"},
            headers={"Authorization": f"Bearer {KEYS['search']}"},
        )
        assert answer.status_code == 200, answer.text
        assert hops == []  # neither the key check nor the search went to a thread
        monkeypatch.undo()


@pytest.mark.parametrize(
    ("tables", "threads"),
    [
        ({}, 0),  # the zero-setup workspace: the default sqlite index, SQLite, the model here
        ({"index": [{"name": "main", "type": "sqlite"}], "embedder": {"type": "fake"}}, 0),
        ({"manifest": {"url": "sqlite:////tmp/m.db"}}, 0),
        ({"index": [{"name": "main", "type": "sqlite"}, {"name": "q", "type": "qdrant"}]}, 0),
        ({"index": [{"name": "q", "type": "qdrant", "path": "/srv/q"}]}, 0),
        ({"index": [{"name": "q", "type": "qdrant", "url": "http://qdrant:6333"}]}, 2),
        ({"index": [{"name": "p", "type": "pgvector", "url": "postgresql://db/hw"}]}, 2),
        ({"manifest": {"url": "postgresql+psycopg://hw@db/headwater"}}, 2),
        ({"embedder": {"type": "openai"}}, 2),
        ({"api": {"search_threads": 3}}, 3),
        ({"api": {"search_threads": 0}, "index": [{"name": "p", "type": "pgvector"}]}, 0),
    ],
)
def test_auto_searches_on_the_loop_only_where_nothing_waits_on_a_server(
    tables: dict[str, object], threads: int
) -> None:
    config = HeadwaterConfig.model_validate({"workspace": {"tenant": "t"}} | tables)
    assert threads_for(config) == threads


@pytest.fixture
def held_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    monkeypatch.setenv(ENV_VAR, f"{IN_SEARCH}:sleep3")  # the server's env copies ours
    config = make_workspace(tmp_path, extra="\n[api]\nsearch_threads = 3\n")
    with Server(config, free_port(), tmp_path / "server.log") as srv:
        yield srv


def test_serve_runs_search_threads_at_once_and_queues_the_rest(held_server: Server) -> None:
    def search(_: int) -> int:
        with held_server.client("search") as client:
            return client.post("/v1/search", json={"query": "vacation days"}).status_code

    seen: list[tuple[float, float]] = []

    def gauges() -> tuple[float, float]:
        with held_server.client() as client:
            found = samples(client.get("/metrics").text)
        seen.append(
            (found[("headwater_searches_running", "")], found[("headwater_searches_waiting", "")])
        )
        return seen[-1]

    assert gauges() == (0.0, 0.0)
    with ThreadPoolExecutor(5) as clients:
        answers = clients.map(search, range(5))
        wait_for(lambda: gauges() == (3.0, 2.0), timeout=30)
        assert list(answers) == [200] * 5
    assert max(running for running, _ in seen) == 3.0
    assert gauges() == (0.0, 0.0)
