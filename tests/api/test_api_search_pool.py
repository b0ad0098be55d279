"""At most ``[api] search_threads`` searches of a worker run at once; the rest wait their
turn in arrival order (``api/search_pool.py``).

The pool alone: six searches on two slots, released one by one, start in the order they
came. A real ``headwater serve`` with ``search_threads = 3`` and every search held 3 s at
the ``in_search`` failpoint: five searches sent together show 3 running and 2 waiting in
``/metrics``, never more running, and all five answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from api_support import Server, make_workspace, wait_for
from test_api_metrics_logs import samples

from headwater.api.search_pool import SearchPool
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
