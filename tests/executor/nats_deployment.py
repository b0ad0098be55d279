"""A NATS-executor deployment on this machine: the real JetStream at 127.0.0.1:4222 (a
stream and subject prefix of each test's own, deleted afterwards), a PostgreSQL
manifest, and ``headwater worker`` subprocesses."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import nats
from nats.js.errors import NotFoundError

from headwater import Workspace
from headwater.executor.nats_dispatch import open_queue, queue_runs
from workspace_helpers import write_config

ROOT = Path(__file__).parents[2]
NATS_URL = "nats://127.0.0.1:4222"
PUBLIC = "{ public = true }"


def wait_until(condition: Callable[[], object], timeout: float = 60.0, what: str = "it") -> None:
    """Poll ``condition`` until it is true; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(0.1)


def corpus(root: Path, docs: int = 12) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(docs):
        (root / f"note{i:02d}.md").write_text(f"# Note {i}\n\nnatsword{i} is in note {i}.\n")
    return root


def filesystem(source_id: str, root: Path) -> str:
    return (
        f'[[source]]\nid = "{source_id}"\ntype = "filesystem"\nroot = "{root}"\n'
        f"batch_size = 4\naccess = {PUBLIC}\n\n"
    )


@dataclass(frozen=True)
class Consumer:
    """The workers' consumer as JetStream counts it."""

    delivered: int  # deliveries, redeliveries included
    acked_stream_seq: int  # the newest stream sequence acknowledged
    pending: int  # messages not yet delivered
    ack_pending: int  # delivered, not yet acknowledged


class NatsDeployment:
    def __init__(self, tmp: Path, manifest_url: str, sources: str, extra: str = "") -> None:
        tag = uuid.uuid4().hex[:12]
        self.tmp, self.stream, self.prefix = tmp, f"HWRUNS_{tag}", f"hwruns{tag}"
        executor = (
            f'[executor]\ntype = "nats"\nurl = "{NATS_URL}"\nstream = "{self.stream}"\n'
            f'subject_prefix = "{self.prefix}"\nack_wait = 2\n{extra}'
            "[sync]\nlease_seconds = 30\nindex_batch_size = 4\n"
        )
        self.config = write_config(tmp, manifest_url=manifest_url, sources=sources, extra=executor)
        self.workers: list[subprocess.Popen[bytes]] = []

    def start_worker(self, failpoints: str = "", slots: int = 1) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HEADWATER_FAILPOINTS": failpoints}
        env["HF_HUB_OFFLINE"] = "1"
        log = open(self.tmp / f"worker{len(self.workers)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "headwater", "-c", str(self.config), "worker",
             "--loglevel", "INFO", "--concurrency", str(slots)],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp,
        )  # fmt: skip
        self.workers.append(proc)
        return proc

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-4000:] for p in sorted(self.tmp.glob("worker*.log"))
        )

    def consumer(self) -> Consumer:
        async def ask() -> Consumer:
            nc = await nats.connect(NATS_URL)
            try:
                info = await nc.jetstream().consumer_info(self.stream, "workers")
            finally:
                await nc.close()
            return Consumer(
                int(info.delivered.consumer_seq),
                int(info.ack_floor.stream_seq),
                int(info.num_pending),
                int(info.num_ack_pending),
            )

        return asyncio.run(ask())

    def messages(self) -> int:
        async def ask() -> int:
            nc = await nats.connect(NATS_URL)
            try:
                return int((await nc.jetstream().stream_info(self.stream)).state.messages)
            finally:
                await nc.close()

        return asyncio.run(ask())

    def delete_message(self, seq: int) -> None:
        async def delete() -> None:
            nc = await nats.connect(NATS_URL)
            try:
                await nc.jetstream().delete_msg(self.stream, seq)
            finally:
                await nc.close()

        asyncio.run(delete())

    def stop(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in self.workers:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

        async def drop() -> None:
            nc = await nats.connect(NATS_URL)
            try:
                with suppress(NotFoundError):
                    await nc.jetstream().delete_stream(self.stream)
            finally:
                await nc.close()

        asyncio.run(drop())


def stopped(proc: subprocess.Popen[bytes]) -> bool:
    """Whether ``proc`` is stopped (SIGSTOP: state ``T`` in /proc)."""
    stat = Path(f"/proc/{proc.pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "T"


def publish(ws: Workspace, *sources: str, index: bool = True) -> None:
    """Publish a run message per source, as the scheduler does; each must be new."""
    with open_queue(ws.runtime) as queue:
        queued = queue_runs(ws.runtime, queue, list(sources), "test", index=index)
    assert [q.state for q in queued] == ["published"] * len(sources)


def latest_status(ws: Workspace, source: str) -> str | None:
    """The status of the source's newest run (None before its first)."""
    record = ws.manifest.runs.latest(source)
    return None if record is None else record.status
