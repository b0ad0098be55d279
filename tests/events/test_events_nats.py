"""Change events out on the real NATS JetStream at 127.0.0.1:4222 (each test its own
stream and subject prefix): the outbox is written in the change's own transaction, a
consumer sees each change once in revision order per document, a SIGKILL between commit
and publish (and between publish and the outbox delete) loses and duplicates nothing,
and NATS down stops nothing: the outbox grows, then drains when NATS is back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from nats_support import (
    StreamName,
    consume,
    drop_stream,
    fresh_stream,
    private_nats,
    wait_for,
)

from headwater import Workspace
from headwater.api.metrics import ManifestCollector
from headwater.api.service import Service
from headwater.errors import WriteConflict
from headwater.events import EventPump
from headwater.manifest.records import BatchCommit, RowVersion, TombstoneWrite
from ports import free_port
from workspace_helpers import filesystem_source, write_config


@pytest.fixture
def name() -> Iterator[StreamName]:
    made = fresh_stream()
    yield made
    drop_stream(made)


def config(tmp_path: Path, corpus: Path, events: str, manifest_url: str | None = None) -> Path:
    return write_config(
        tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus), extra=events
    )


def headwater(
    directory: Path, *args: str, failpoint: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("HEADWATER_FAILPOINTS", None)
    if failpoint:
        env["HEADWATER_FAILPOINTS"] = failpoint
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def document_events(seen: list) -> dict[str, list[tuple[int, str]]]:  # type: ignore[type-arg]
    """(revision, kind) of each document's document.* events, in the order received."""
    by_doc: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for s in seen:
        if s.payload["kind"] != "applied":
            by_doc[s.payload["object_id"]].append((s.payload["revision"], s.payload["kind"]))
    return by_doc


def test_the_outbox_is_written_in_the_changes_transaction(
    tmp_path: Path, corpus: Path, manifest_url: str
) -> None:
    """A committed batch leaves its events; a batch rolled back (a write conflict) leaves
    neither its change nor any event."""
    down = StreamName("UNUSED", "unused").table("nats://127.0.0.1:1")  # nothing drains
    with Workspace.open(config(tmp_path, corpus, down, manifest_url)) as ws:
        ws.sync(index=False)
        outbox = ws.manifest.outbox
        events = outbox.pending(100)
        assert sorted(e.object_id for e in events) == sorted(
            ["guides/vacation.md", "guides/expenses.md", "notes/deploy.txt",
             "notes/welcome.html", "readme.md"]
        )  # fmt: skip
        assert {(e.kind, e.revision) for e in events} == {("upserted", 1)}
        doc = ws.manifest.document_by_object("docs", "readme.md")
        assert doc is not None
        ok = TombstoneWrite(doc.document_id, "docs", "readme.md", 2, None, "manual")
        other = ws.manifest.document_by_object("docs", "notes/deploy.txt")
        assert other is not None
        stale = TombstoneWrite(  # decided from a row version the row is not at: conflict
            other.document_id, "docs", "notes/deploy.txt", 9, None, "manual",
            expect=RowVersion(7, None, "active"),
        )  # fmt: skip
        with pytest.raises(WriteConflict):
            ws.manifest.commit_batch("run", BatchCommit(tombstones=[ok, stale]))
        assert outbox.depth() == 5
        assert ws.manifest.document(doc.document_id).state == "active"  # type: ignore[union-attr]
        ws.manifest.commit_batch("run", BatchCommit(tombstones=[ok]))
        last = outbox.pending(100)[-1]
        assert (last.kind, last.object_id, last.revision) == ("deleted", "readme.md", 2)
        assert outbox.depth() == 6


def test_a_consumer_sees_each_change_once_in_revision_order(
    tmp_path: Path, corpus: Path, name: StreamName
) -> None:
    cfg = config(tmp_path, corpus, name.table())
    with Workspace.open(cfg) as ws:
        ws.sync()
        (corpus / "readme.md").write_text("# Readme\n\nEdited once.\n")
        ws.sync()
        (corpus / "readme.md").write_text("# Readme\n\nEdited twice.\n")
        (corpus / "notes" / "deploy.txt").unlink()
        ws.sync()
        assert ws.status()["events"] == {"type": "nats", "outbox_depth": 0, "last_error": None}
    # An ACL-only change: the access of the source changes, no content is re-read.
    cfg = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus, access='{ groups = ["staff", "hr"] }'),
        extra=name.table(),
    )
    with Workspace.open(cfg) as ws:
        ws.sync()
        readme = ws.manifest.document_by_object("docs", "readme.md")
        assert readme is not None
    seen = consume(name)
    assert len({s.msg_id for s in seen}) == len(seen)  # nothing twice
    by_doc = document_events(seen)
    assert by_doc["readme.md"] == [
        (1, "upserted"), (2, "upserted"), (3, "upserted"), (4, "access_changed"),
    ]  # fmt: skip
    assert by_doc["notes/deploy.txt"] == [(1, "upserted"), (2, "deleted")]
    assert by_doc["guides/vacation.md"] == [(1, "upserted"), (2, "access_changed")]
    for s in seen:
        assert s.subject.startswith(f"{name.prefix}.acme.")
        if s.payload["kind"] == "access_changed":
            assert s.payload["access"] == list(readme.acl)  # every document got the same ACL
            assert s.subject == f"{name.prefix}.acme.docs.document.access_changed"
    applied = [s for s in seen if s.payload["kind"] == "applied"]
    assert {s.subject for s in applied} == {f"{name.prefix}.acme.index.main.applied"}
    assert all(s.payload["index"] == "main" and s.payload["generation"] == 1 for s in applied)
    readme_applied = [
        s.payload["revision"] for s in applied if s.payload["object_id"] == "readme.md"
    ]
    assert readme_applied == sorted(readme_applied) and readme_applied[-1] == readme.revision
    # each applied event follows the change it confirms
    order = [(s.payload["object_id"], s.payload["revision"], s.payload["kind"]) for s in seen]
    for i, (obj, rev, kind) in enumerate(order):
        if kind == "applied":
            assert any(o == obj and r == rev and k != "applied" for o, r, k in order[:i])
    first = seen[0].payload
    assert set(first) == {
        "kind", "tenant", "source", "object_id", "document_id", "revision", "at",
    }  # fmt: skip
    assert first["tenant"] == "acme" and first["source"] == "docs"
    assert seen[0].msg_id == f"{first['document_id']}:{first['revision']}:{first['kind']}"
    assert applied[0].msg_id.endswith(":applied:main:1")


@pytest.mark.parametrize("failpoint", ["after_manifest_commit", "after_events_published"])
def test_a_sigkill_between_commit_and_publish_loses_and_duplicates_nothing(
    tmp_path: Path, corpus: Path, name: StreamName, failpoint: str
) -> None:
    config(tmp_path, corpus, name.table())
    killed = headwater(tmp_path, "sync", "--json", failpoint=failpoint)
    assert killed.returncode == -9, killed.stderr
    with Workspace.open(tmp_path) as ws:
        waiting = ws.manifest.outbox.depth()
    assert waiting > 0  # committed events survived the kill, unsent or unconfirmed
    before = consume(name)
    assert len(before) == (0 if failpoint == "after_manifest_commit" else waiting)
    done = headwater(tmp_path, "sync", "--json")
    assert done.returncode == 0, done.stderr
    with Workspace.open(tmp_path) as ws:
        assert ws.manifest.outbox.depth() == 0
    seen = consume(name)
    assert len({s.msg_id for s in seen}) == len(seen)  # JetStream dropped the re-sends
    by_doc = document_events(seen)
    assert set(by_doc) == {
        "guides/vacation.md", "guides/expenses.md", "notes/deploy.txt",
        "notes/welcome.html", "readme.md",
    }  # fmt: skip
    assert all(events == [(1, "upserted")] for events in by_doc.values())
    applied = {s.payload["object_id"] for s in seen if s.payload["kind"] == "applied"}
    assert applied == set(by_doc)


def test_nats_down_stops_nothing_and_the_outbox_drains_when_it_is_back(
    tmp_path: Path, corpus: Path, name: StreamName
) -> None:
    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    with Workspace.open(config(tmp_path, corpus, name.table(url))) as ws:
        result = ws.sync()  # no server on the port: the sync is not held up
        assert [r.status for r in result.runs] == ["succeeded"]
        assert ws.search("vacation days", groups=["staff"])  # indexed all the same
        status = ws.status()["events"]
        assert status["outbox_depth"] == 10 and "did not take the events" in status["last_error"]
        gauges = {m.name: m for m in ManifestCollector(Service(ws)).collect()}
        assert gauges["headwater_events_outbox_depth"].samples[0].value == 10
        listed = headwater(tmp_path, "status", "--json")
        assert json.loads(listed.stdout)["events"]["outbox_depth"] == 10
        with private_nats(port, tmp_path / "js"):
            pump = EventPump(ws.runtime.events, interval=0.1).start()  # type: ignore[arg-type]
            try:
                wait_for(lambda: ws.manifest.outbox.depth() == 0, what="the outbox to drain")
            finally:
                pump.stop()
            seen = consume(name, url)
    assert len(seen) == 10 and len({s.msg_id for s in seen}) == 10
    assert all(events == [(1, "upserted")] for events in document_events(seen).values())


def test_events_tail_prints_events_as_they_arrive(
    tmp_path: Path, corpus: Path, name: StreamName
) -> None:
    cfg = config(tmp_path, corpus, name.table())
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    tail = subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "events", "tail", "--json", "--count", "5",
         "--subject", f"{name.prefix}.acme.docs.document.>"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert tail.stderr is not None
        assert "listening on" in tail.stderr.readline()  # the consumer exists from here on
        with Workspace.open(cfg) as ws:
            ws.sync()
        out, _ = tail.communicate(timeout=60)
    finally:
        tail.kill()
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 5 and tail.returncode == 0
    assert {line["kind"] for line in lines} == {"upserted"}
    assert all(line["subject"] == f"{name.prefix}.acme.docs.document.upserted" for line in lines)


def test_the_scheduler_sends_the_events_of_its_runs(
    tmp_path: Path, corpus: Path, name: StreamName
) -> None:
    """``headwater run --once``: the pump sends while it runs and drains before it exits."""
    config(tmp_path, corpus, name.table())
    done = headwater(tmp_path, "run", "--once")
    assert done.returncode == 0, done.stderr
    with Workspace.open(tmp_path) as ws:
        assert ws.manifest.outbox.depth() == 0
    seen = consume(name)
    assert sorted(s.payload["kind"] for s in seen) == ["applied"] * 5 + ["upserted"] * 5


def test_serve_sends_events_committed_by_anyone_meanwhile(
    tmp_path: Path, corpus: Path, name: StreamName
) -> None:
    """``headwater serve``'s service pumps the outbox: a change committed outside any sync
    (here a batch straight into the manifest) goes out without a drain being asked for."""
    ws = Workspace.open(config(tmp_path, corpus, name.table()))
    ws.sync(index=False)
    service = Service(ws).start()
    try:
        doc = ws.manifest.document_by_object("docs", "readme.md")
        assert doc is not None
        gone = TombstoneWrite(doc.document_id, "docs", "readme.md", 2, None, "manual")
        ws.manifest.commit_batch("run", BatchCommit(tombstones=[gone]))
        wait_for(lambda: ws.manifest.outbox.depth() == 0, what="the serve pump to drain")
    finally:
        service.close()
    seen = document_events(consume(name))
    assert seen["readme.md"] == [(1, "upserted"), (2, "deleted")]
