"""The NATS JetStream work queue of due runs: its stream, its messages, publishing.

A due run of a source is one message on ``<subject_prefix>.sync.<source>`` in a stream
with ``retention = workqueue`` (``[executor] stream``): a message stays until a worker
acknowledges it, so "a message waits for this subject" is exactly "this source's run is
queued or being worked on". The message names the run it asks for as "the run after run
X" (``after_run``, the source's newest run when it was published; ``resume`` when X was
still running, so the message asks for X to be finished), and its
``Nats-Msg-Id`` is ``<tenant>:<source>:<after_run>``: two schedulers (or a scheduler and
``headwater sync``) that find the same run due publish one message, JetStream dropping
the second within its de-duplication window. Workers share one durable pull consumer
(``workers``) with explicit acks, ``ack_wait`` from the config and no delivery limit of
its own: the worker counts deliveries and records a run that used them up as failed
(``nats_worker``), so no message is ever left undeliverable in the stream. nats-py is
asynchronous: ``WorkQueue`` runs its own event loop in the calling thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import asdict, dataclass
from typing import Any

import nats
from nats.errors import Error as NatsError
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StreamConfig
from nats.js.errors import NotFoundError

from headwater.config import ExecutorSection
from headwater.config.events import NATS_URL
from headwater.errors import TransientError

log = logging.getLogger("headwater.executor")

CONSUMER = "workers"
DUPLICATE_WINDOW_S = 120.0
FAILURES = (NatsError, OSError, asyncio.TimeoutError)
FIRST = "first"  # ``after_run`` of a source that never ran


@dataclass(frozen=True)
class RunMessage:
    """One due run: the source, the run it follows, and how to run it."""

    source_id: str
    after_run: str  # the source's newest run id when published, or FIRST
    reason: str  # why it is due: first, sync, retry, resume, prune, manual
    force: bool = False
    index: bool = True
    resume: bool = False  # ``after_run`` was still running: this message resumes it

    def body(self) -> bytes:
        """The JSON the message carries."""
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def parse(cls, data: bytes) -> RunMessage:
        """The message from its JSON (ValueError when it is not one)."""
        raw = json.loads(data)
        if not isinstance(raw, dict) or not isinstance(raw.get("source_id"), str):
            raise ValueError(f"not a run message: {data[:200]!r}")
        return cls(
            source_id=raw["source_id"],
            after_run=str(raw.get("after_run") or FIRST),
            reason=str(raw.get("reason") or "sync"),
            force=bool(raw.get("force", False)),
            index=bool(raw.get("index", True)),
            resume=bool(raw.get("resume", False)),
        )

    def message_id(self, tenant: str) -> str:
        """``Nats-Msg-Id``: one id per (source, run it follows)."""
        return f"{tenant}:{self.source_id}:{self.after_run}"


def subject_of(prefix: str, source_id: str) -> str:
    """The subject of ``source_id``'s runs (a dot in a source id is written ``~``)."""
    return f"{prefix}.sync.{source_id.replace('.', '~')}"


def source_of(prefix: str, subject: str) -> str:
    """The source id a run subject names (the inverse of ``subject_of``)."""
    return subject.removeprefix(f"{prefix}.sync.").replace("~", ".")


async def _quiet(exc: Exception) -> None:
    log.debug("nats: %s", exc)


async def connect(url: str, timeout: float = 5.0) -> Any:
    """A NATS connection to ``url`` that gives up within a few seconds when refused."""
    return await asyncio.wait_for(
        nats.connect(
            url,
            connect_timeout=timeout,
            max_reconnect_attempts=1,
            reconnect_time_wait=0.2,
            error_cb=_quiet,
        ),
        timeout * 2 + 1,
    )


async def ensure_stream(js: Any, executor: ExecutorSection) -> None:
    """Create the work-queue stream over ``<subject_prefix>.>`` unless it exists."""
    try:
        await js.stream_info(executor.stream)
    except NotFoundError:
        await js.add_stream(
            StreamConfig(
                name=executor.stream,
                subjects=[f"{executor.subject_prefix}.>"],
                retention=RetentionPolicy.WORK_QUEUE,
                duplicate_window=DUPLICATE_WINDOW_S,
            )
        )


def consumer_config(executor: ExecutorSection) -> ConsumerConfig:
    """The workers' shared durable pull consumer: explicit acks, no delivery limit."""
    return ConsumerConfig(
        durable_name=CONSUMER,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=executor.ack_wait,
        max_deliver=-1,
        max_ack_pending=-1,
        filter_subject=f"{executor.subject_prefix}.sync.>",
    )


def unreachable(executor: ExecutorSection, exc: BaseException) -> TransientError:
    """The error for a NATS server that did not answer (its URL, the stream, the fix)."""
    return TransientError(
        f"NATS at {executor.url or NATS_URL} (work-queue stream {executor.stream}) did not "
        f"answer ({type(exc).__name__}: {exc}); nothing was queued. Check that "
        "`nats-server -js` runs there, and [executor] url and stream"
    )


class WorkQueue:
    """A publisher's connection to the work-queue stream (the scheduler, ``sync``)."""

    def __init__(self, executor: ExecutorSection, tenant: str) -> None:
        self.executor, self.tenant = executor, tenant
        self.loop = asyncio.new_event_loop()
        self.nc: Any = None
        try:
            self.nc = self.loop.run_until_complete(connect(executor.url or NATS_URL))
            self.js = self.nc.jetstream(timeout=5.0)
            self.loop.run_until_complete(ensure_stream(self.js, executor))
        except FAILURES as exc:
            self.close()
            raise unreachable(executor, exc) from exc

    def publish(self, message: RunMessage, *, msg_id: str | None = None) -> bool:
        """Queue ``message``; False when JetStream dropped it as a duplicate of its id."""
        prefix = self.executor.subject_prefix
        try:
            ack = self.loop.run_until_complete(
                self.js.publish(
                    subject_of(prefix, message.source_id),
                    message.body(),
                    stream=self.executor.stream,
                    headers={"Nats-Msg-Id": msg_id or message.message_id(self.tenant)},
                )
            )
        except FAILURES as exc:
            raise unreachable(self.executor, exc) from exc
        return not ack.duplicate

    def waiting(self) -> dict[str, int]:
        """Source id → messages in the stream for it (waiting or being worked on)."""
        prefix = self.executor.subject_prefix
        try:
            info = self.loop.run_until_complete(
                self.js.stream_info(self.executor.stream, subjects_filter=f"{prefix}.sync.>")
            )
        except FAILURES as exc:
            raise unreachable(self.executor, exc) from exc
        subjects = info.state.subjects or {}
        return {source_of(prefix, s): int(n) for s, n in subjects.items() if n}

    def close(self) -> None:
        """Close the connection and the event loop."""
        try:
            if self.nc is not None and not self.nc.is_closed:
                self.loop.run_until_complete(self.nc.close())
        except FAILURES as exc:
            log.debug("closing the NATS connection: %s", exc)
        finally:
            self.loop.close()

    def __enter__(self) -> WorkQueue:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
