"""Change events out: events/s during an initial sync, and the outbox through an outage.

In a scratch directory: N one-paragraph files, a filesystem source, the fake embedder and
the embedded index, ``[events] type = "nats"`` on the NATS at 127.0.0.1:4222 (a stream of
its own, deleted afterwards). It reports the wall time of the initial sync with indexing
(which writes 2 N events: N ``upserted``, N ``applied``), then the time the drain at its
end took and the events/s that gives. Then the outage: the same sync of N edited files
against a port where no NATS answers (the sync goes on; the outbox depth after it), then a
drain to the real server: depth 0, and what a fresh consumer of the stream counts
(every event once: messages == distinct ``Nats-Msg-Id``).

    PYTHONPATH=src .venv/bin/python bench/events.py 2000
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

import nats

from headwater import Workspace

URL = "nats://127.0.0.1:4222"


def write_config(root: Path, corpus: Path, stream: str, prefix: str, url: str) -> None:
    (root / "headwater.toml").write_text(
        f"""[workspace]
tenant = "bench"
state_dir = "state"
[embedder]
type = "fake"
dimension = 32
[[index]]
name = "main"
type = "sqlite"
[events]
type = "nats"
url = "{url}"
stream = "{stream}"
subject_prefix = "{prefix}"
[[source]]
id = "docs"
type = "filesystem"
root = "{corpus}"
access = {{ groups = ["staff"] }}
"""
    )


async def stream_count(stream: str, prefix: str) -> tuple[int, int]:
    """(messages, distinct message ids) a consumer of the whole stream receives."""
    nc = await nats.connect(URL)
    try:
        js = nc.jetstream()
        total = (await js.stream_info(stream)).state.messages
        sub = await js.pull_subscribe(f"{prefix}.>", stream=stream)
        ids: set[str] = set()
        got = 0
        while got < total:
            for msg in await sub.fetch(min(1000, total - got), timeout=10):
                await msg.ack()
                ids.add((msg.headers or {}).get("Nats-Msg-Id", ""))
                got += 1
        await js.delete_stream(stream)
        return got, len(ids)
    finally:
        await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("documents", type=int, nargs="?", default=2000)
    n = parser.parse_args().documents
    tag = uuid.uuid4().hex[:8]
    stream, prefix = f"BENCH_{tag}", f"bench{tag}"
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        corpus = root / "corpus"
        corpus.mkdir()
        for i in range(n):
            (corpus / f"doc-{i}.md").write_text(f"# Doc {i}\n\nParagraph number {i}.\n")
        write_config(root, corpus, stream, prefix, URL)
        with Workspace.open(root) as ws:
            events = ws.runtime.events
            assert events is not None
            started = time.perf_counter()
            ws.sync(index=True)  # drains at its end
            total = time.perf_counter() - started
        # Again, timing the drain alone: the same events re-sent from a refilled outbox
        # would be duplicates, so measure on the edit round below instead.
        for i in range(n):
            (corpus / f"doc-{i}.md").write_text(f"# Doc {i}\n\nParagraph {i}, edited.\n")
        write_config(root, corpus, stream, prefix, "nats://127.0.0.1:9")  # nothing there
        with Workspace.open(root) as ws:
            ws.sync(index=True)
            depth = ws.manifest.outbox.depth()
        write_config(root, corpus, stream, prefix, URL)
        with Workspace.open(root) as ws:
            started = time.perf_counter()
            report = ws.publish_events()
            drain = time.perf_counter() - started
            assert report is not None
            after = ws.manifest.outbox.depth()
    messages, distinct = asyncio.run(stream_count(stream, prefix))
    print(f"initial sync of {n} documents with indexing and events: {total:.1f} s")
    print(f"NATS down during a sync of {n} edits: outbox depth {depth} after it")
    print(
        f"drain when back: {report.sent} events in {drain:.2f} s "
        f"({report.sent / drain:.0f} events/s), depth {after} after"
    )
    print(f"consumer: {messages} messages, {distinct} distinct ids (expected {4 * n})")


if __name__ == "__main__":
    main()
