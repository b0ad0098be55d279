"""`Workspace.sync` runs up to `max_concurrent` sources at once, reported in config order.

A connector that meets the other sources' runs at a barrier proves the overlap without
timing anything: run one after another, the first run waits at the barrier alone, the
barrier breaks and the run fails. ``run_each`` itself: its limit, its order, Ctrl-C and
an item that raises.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from headwater import Workspace
from headwater.connectors.base import ConnectorCapabilities, ConnectorOptions, SourceContext
from headwater.errors import ConfigError, SourceBusy
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.sync.parallel import run_each
from headwater.types import Checkpoint, KnownVersions, SourceDocument, Window
from workspace_helpers import write_config

WAIT_S = 20.0  # a deadline for a broken test, never reached by a passing one


class Meeting:
    """Where the runs of one test meet: a barrier and the most runs seen inside at once."""

    barrier: threading.Barrier | None = None
    lock = threading.Lock()
    inside = 0
    most = 0
    threads: ClassVar[set[str]] = set()

    @classmethod
    def reset(cls, parties: int) -> None:
        cls.barrier = threading.Barrier(parties, timeout=WAIT_S)
        cls.inside = cls.most = 0
        cls.threads = set()


class MeetOptions(ConnectorOptions):
    meet: bool = True


class MeetingConnector:
    """Two documents; with ``meet``, its read waits at the barrier for the other runs."""

    type_name: ClassVar[str] = "meeting"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[MeetOptions]] = MeetOptions

    def __init__(self, options: MeetOptions, context: SourceContext) -> None:
        self.options = options
        self.source_id = context.source_id

    def validate(self) -> None:
        return None

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> Iterator[SourceDocument | Checkpoint]:
        with Meeting.lock:
            Meeting.inside += 1
            Meeting.most = max(Meeting.most, Meeting.inside)
            Meeting.threads.add(threading.current_thread().name)
        try:
            if self.options.meet:
                assert Meeting.barrier is not None
                Meeting.barrier.wait()  # BrokenBarrierError: the runs did not overlap
            for n in range(2):
                yield SourceDocument(
                    object_id=f"{self.source_id}-{n}",
                    locator=f"meeting://{self.source_id}/{n}",
                    title=f"{self.source_id} {n}",
                    version="v1",
                    content=f"{self.source_id} document {n} about meetings.".encode(),
                    media_type="text/plain",
                )
        finally:
            with Meeting.lock:
                Meeting.inside -= 1


def _sources(*ids: str, meet: bool = True) -> str:
    return "".join(
        f'[[source]]\nid = "{i}"\ntype = "meeting"\nmeet = {str(meet).lower()}\n'
        "access = { public = true }\n"
        for i in ids
    )


def _open(tmp_path: Path, sources: str) -> Workspace:
    config = write_config(tmp_path, manifest_url=None, sources=sources)
    return Workspace.open(
        config, embedder=FakeEmbedder(dimension=32), connector_types={"meeting": MeetingConnector}
    )


def test_two_sources_run_at_once_and_are_reported_in_config_order(tmp_path: Path) -> None:
    Meeting.reset(parties=2)
    with _open(tmp_path, _sources("zeta", "alpha")) as ws:
        result = ws.sync(max_concurrent=2)
        assert [r.source for r in result.runs] == ["zeta", "alpha"]  # config order
        assert [r.status for r in result.runs] == ["succeeded", "succeeded"], result.runs
        assert Meeting.most == 2 and len(Meeting.threads) == 2
        assert ws.manifest.count_documents("zeta") == ws.manifest.count_documents("alpha") == 2
        runs = {s: ws.manifest.runs.latest(s) for s in ("zeta", "alpha")}
        assert all(r is not None and r.status == "succeeded" for r in runs.values())


def test_one_at_a_time_by_default_in_the_calling_thread(tmp_path: Path) -> None:
    Meeting.reset(parties=2)
    with _open(tmp_path, _sources("a", "b", meet=False)) as ws:
        result = ws.sync()
        assert [r.status for r in result.runs] == ["succeeded", "succeeded"]
        assert Meeting.most == 1 and Meeting.threads == {threading.current_thread().name}


def test_never_more_than_max_concurrent_at_once(tmp_path: Path) -> None:
    Meeting.reset(parties=2)  # pairs meet: at most 2 inside, or the third breaks a barrier
    with _open(tmp_path, _sources("a", "b", "c", "d")) as ws:
        result = ws.sync(max_concurrent=2, index=False)
        assert [r.source for r in result.runs] == ["a", "b", "c", "d"]
        assert {r.status for r in result.runs} == {"succeeded"}, result.runs
        assert Meeting.most == 2


def test_a_busy_source_raises_after_the_others_or_is_skipped(tmp_path: Path) -> None:
    Meeting.reset(parties=2)
    with _open(tmp_path, _sources("a", "b", "c", meet=False)) as ws:
        ws.manifest.ensure_source("b", "meeting")
        held = ws.manifest.runs.leases.acquire("b", "other-host:1:x:y", 300)
        with pytest.raises(SourceBusy, match="is being synced by other-host:1:x:y") as caught:
            ws.sync(max_concurrent=2, index=False)
        assert caught.value.holder == held.owner and caught.value.source_id == "b"
        result = ws.sync(max_concurrent=2, index=False, skip_busy=True)
        assert [r.source for r in result.runs] == ["a", "c"]
        assert [s.as_dict() for s in result.skipped] == [
            {
                "source": "b",
                "reason": "busy",
                "holder": "other-host:1:x:y",
                "until": caught.value.until.isoformat(),
            }
        ]
        assert result.as_dict()["skipped"][0]["holder"] == held.owner


# -- run_each --------------------------------------------------------------------------


def test_run_each_keeps_the_order_of_its_items() -> None:
    second_done = threading.Event()

    def work(n: int) -> int:
        if n == 0:  # the first item ends last
            assert second_done.wait(WAIT_S)
        else:
            second_done.set()
        return n * 10

    assert run_each([0, 1], work, limit=2, cancel=threading.Event()) == [0, 10]


def test_run_each_starts_nothing_more_once_cancelled() -> None:
    cancel = threading.Event()
    started: list[int] = []

    def work(n: int) -> int:
        started.append(n)
        cancel.set()  # Ctrl-C during the first two
        return n

    assert run_each([0, 1, 2, 3], work, limit=1, cancel=cancel) == [0, None, None, None]
    started.clear()
    cancel.clear()
    meet = threading.Barrier(2, timeout=WAIT_S)

    def paired(n: int) -> int:
        meet.wait()
        return work(n)

    assert run_each([0, 1, 2, 3], paired, limit=2, cancel=cancel) == [0, 1, None, None]
    assert sorted(started) == [0, 1]


def test_run_each_raises_the_first_error_once_the_running_items_are_done() -> None:
    finished: list[int] = []
    failing: list[threading.Thread] = []
    meet = threading.Barrier(2, timeout=WAIT_S)

    def work(n: int) -> int:
        if n == 0:
            failing.append(threading.current_thread())
            meet.wait()
            raise ConfigError(f"item {n} is wrong")
        if n == 1:
            meet.wait()
            failing[0].join(WAIT_S)  # still running when item 0 raised
        finished.append(n)
        return n

    with pytest.raises(ConfigError, match="item 0 is wrong"):
        run_each([0, 1, 2, 3], work, limit=2, cancel=threading.Event())
    assert finished == [1]  # item 1 finished; nothing started after the error
