"""Index claims and queued markers on real manifests (SQLite and PostgreSQL), no broker.

Two owners never hold the same pending document; an expired claim is taken over; a
redelivered task (same owner) takes its own claims back; ``index_claimed`` indexes each
pending document exactly once. A source is queued at most once, and a live lease counts
as "running". The ``[executor]`` config refuses a SQLite manifest under Celery.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.config import executor_warnings, load_config
from headwater.errors import ConfigError
from headwater.executor.work import index_claimed, index_tasks_for
from headwater.manifest.claims import ClaimLedger
from headwater.manifest.queued import QueueMarkers
from workspace_helpers import filesystem_source, write_config

CELERY = '[executor]\ntype = "celery"\nbroker_url = "redis://127.0.0.1:6379/7"\n'


@pytest.fixture
def synced(tmp_path: Path, manifest_url: str, corpus: Path) -> Iterator[Workspace]:
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync(index=False)
        yield ws


def targets(ws: Workspace) -> list[tuple[str, str]]:
    return [(t.name, t.version) for t in ws.indexes.indexer().targets]


def test_two_owners_never_claim_the_same_document(synced: Workspace) -> None:
    ledger = ClaimLedger(synced.manifest.engine)
    first = ledger.claim("task-a", targets(synced), limit=3, seconds=60)
    second = ledger.claim("task-b", targets(synced), limit=3, seconds=60)
    assert len(first) == 3 and len(second) == 2
    assert not set(first) & set(second)
    assert ledger.claim("task-c", targets(synced), limit=3, seconds=60) == []
    assert ledger.holders() == {"task-a": 3, "task-b": 2}


def test_concurrent_claims_are_disjoint(synced: Workspace) -> None:
    ledger = ClaimLedger(synced.manifest.engine)
    won: dict[str, list[str]] = {}
    barrier = threading.Barrier(4)

    def claim(owner: str) -> None:
        barrier.wait()
        won[owner] = ledger.claim(owner, targets(synced), limit=5, seconds=60)

    threads = [threading.Thread(target=claim, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [d for ids in won.values() for d in ids]
    assert len(claimed) == len(set(claimed)) == 5


def test_an_expired_claim_is_taken_over_and_an_owner_retakes_its_own(synced: Workspace) -> None:
    ledger = ClaimLedger(synced.manifest.engine)
    dead = ledger.claim("dead-worker", targets(synced), limit=5, seconds=0)
    assert len(dead) == 5
    assert sorted(ledger.claim("live", targets(synced), limit=5, seconds=60)) == sorted(dead)
    assert sorted(ledger.claim("live", targets(synced), limit=5, seconds=60)) == sorted(dead)


def test_index_claimed_indexes_every_pending_document_once(synced: Workspace) -> None:
    assert index_tasks_for(synced.runtime) == 1
    ClaimLedger(synced.manifest.engine).claim("other", targets(synced), limit=2, seconds=60)
    first = index_claimed(synced.runtime, owner="task-1")
    assert first.replaced == 3  # the two claimed by a live other task are left alone
    ClaimLedger(synced.manifest.engine).release("other")
    second = index_claimed(synced.runtime, owner="task-2")
    assert second.replaced == 2
    assert index_tasks_for(synced.runtime) == 0
    assert ClaimLedger(synced.manifest.engine).holders() == {}


def test_a_source_is_queued_at_most_once(synced: Workspace) -> None:
    markers = QueueMarkers(synced.manifest.engine)
    assert markers.take("docs", "task-1", 60) is None
    assert markers.take("docs", "task-2", 60) == "task-1"
    assert markers.queued() == {"docs": "task-1"}
    markers.clear("docs", "task-1")
    assert markers.take("docs", "task-3", 0) is None  # expires at once: a lost message
    assert markers.take("docs", "task-4", 60) is None
    markers.clear("docs", "task-4")
    lease = synced.manifest.runs.leases.acquire("docs", "host:1", 60)
    assert markers.take("docs", "task-5", 60) == "lease:host:1"
    synced.manifest.runs.leases.release(lease)


def test_celery_refuses_a_sqlite_manifest_and_warns_about_a_sqlite_index(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(corpus), extra=CELERY
    )
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert any("manifest.url" in p and "PostgreSQL" in p for p in caught.value.problems)
    config = write_config(
        tmp_path, manifest_url="postgresql+psycopg://u@h/db",
        sources=filesystem_source(corpus), extra='[executor]\ntype = "celery"\n',
    )  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert any("executor.broker_url: required" in p for p in caught.value.problems)
    config = write_config(
        tmp_path, manifest_url="postgresql+psycopg://u@h/db",
        sources=filesystem_source(corpus), extra=CELERY,
    )  # fmt: skip
    (warning,) = executor_warnings(load_config(config).config)
    assert "every Celery worker must run on this one host" in warning
