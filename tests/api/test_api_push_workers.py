"""Pushes into `headwater serve --workers 2`: interleaved clients, both manifests.

Eight clients push versions 1..12 of 30 objects (every fourth version a delete): each
client every object in the same order, its versions of each object shuffled, and a
barrier starts each round of eight requests together, so the same object is pushed at
once through both worker processes (each request is its own connection, so the kernel
hands requests to both workers). Every answer is a 200 or a 409, never a 500; and after
every round (the barrier's action, when all its requests were answered) each object's
manifest row is its highest acknowledged version so far: a later round pushing a higher
version would otherwise hide an acknowledged version replaced by an older one.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_support import KEYS, Server, make_workspace
from sqlalchemy import Engine, create_engine, select

from headwater.manifest import schema as t
from ports import free_port

OBJECTS = 30
VERSIONS = 12
PER_OBJECT = VERSIONS // 2 + 1  # the versions of an object each client pushes
CLIENTS = 8
DOC = "/v1/sources/inbox/documents/"


def is_delete(version: int) -> bool:
    return version % 4 == 0


def client_ops(seed: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    ops: list[tuple[str, int]] = []
    for n in range(OBJECTS):
        versions = list(range(1, VERSIONS + 1))
        rng.shuffle(versions)
        ops += [(f"obj/{n:02d}", v) for v in versions[:PER_OBJECT]]
    return ops


@dataclass
class Oracle:
    """The answers so far, and the manifest rows that disagree with them after a round."""

    engine: Engine
    answers: list[tuple[str, int, int, Any]] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, answer: tuple[str, int, int, Any]) -> None:
        with self.lock:
            self.answers.append(answer)

    def acknowledged(self) -> dict[str, int]:
        highest: dict[str, int] = {}
        for object_id, version, status, _ in self.answers:
            if status == 200:
                highest[object_id] = max(highest.get(object_id, 0), version)
        return highest

    def check(self) -> None:
        """Every object's row holds its highest acknowledged version (state and sequence)."""
        docs = t.documents.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(docs.object_id, docs.state, docs.sequence).where(docs.source_id == "inbox")
            ).all()
        held = {r[0]: (r[1], r[2]) for r in rows}
        for object_id, version in self.acknowledged().items():
            wanted = ("deleted" if is_delete(version) else "active", version)
            if held.get(object_id) != wanted:
                self.wrong.append(
                    f"{object_id}: acknowledged {wanted}, manifest {held.get(object_id)}"
                )


def run_client(url: str, seed: int, rounds: threading.Barrier, oracle: Oracle) -> None:
    headers = {"Authorization": f"Bearer {KEYS['ingest']}"}
    no_reuse = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(base_url=url, headers=headers, timeout=60, limits=no_reuse) as client:
        for object_id, version in client_ops(seed):
            rounds.wait(timeout=120)  # every client pushes the same object at once
            if is_delete(version):
                r = client.delete(DOC + object_id, params={"version": version})
            else:
                body = {"version": version, "text": f"{object_id} version {version}"}
                r = client.put(DOC + object_id, json=body)
            oracle.add((object_id, version, r.status_code, r.json()))
        rounds.wait(timeout=120)  # the last round's check


@pytest.fixture
def workers_server(tmp_path: Path, manifest_url: str) -> Iterator[tuple[Server, str]]:
    extra = f'\n[manifest]\nurl = "{manifest_url}"\n'
    srv = Server(make_workspace(tmp_path, extra), free_port(), tmp_path / "server.log")
    srv.args = ["--workers", "2"]
    srv.start(timeout=120)
    try:
        yield srv, manifest_url
    finally:
        srv.stop()


def test_interleaved_pushes_into_two_workers_keep_every_highest_acknowledged_version(
    workers_server: tuple[Server, str],
) -> None:
    srv, manifest_url = workers_server
    oracle = Oracle(create_engine(manifest_url))
    rounds = threading.Barrier(CLIENTS, action=oracle.check)
    threads = [
        threading.Thread(target=run_client, args=(srv.url, seed, rounds, oracle))
        for seed in range(CLIENTS)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
    finally:
        oracle.engine.dispose()
    assert not any(thread.is_alive() for thread in threads)
    assert not rounds.broken
    answers = oracle.answers
    assert len(answers) == CLIENTS * OBJECTS * PER_OBJECT
    bad = [a for a in answers if a[2] not in (200, 409)]
    assert bad == [], bad[:5]
    for _object_id, version, status, body in answers:
        if status == 200:
            assert body["status"] in ("new", "changed", "unchanged", "deleted"), body
        else:  # refused because the manifest held this version or a newer one
            assert body["current_version"] is not None and body["current_version"] >= version
    assert len(oracle.acknowledged()) == OBJECTS
    assert oracle.wrong == [], oracle.wrong[:5]
    log = srv.log.read_text().splitlines()
    assert len([line for line in log if "Started server process" in line]) == 2  # both up
