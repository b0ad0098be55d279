"""``headwater worker`` with ``[executor] type = "nats"``: consume run messages, one per slot.

Each of ``concurrency`` slots pulls one message at a time from the shared durable
consumer (``nats_queue.CONSUMER``) and hands it to ``nats_run.handle`` in a thread,
while the event loop tells JetStream every ``min(10 s, ack_wait / 3)`` that the message
is still being worked on (``InProgress``), so a long sync is never redelivered while its
worker lives. A worker that dies (SIGKILL, OOM, a lost host) sends nothing more: after
``ack_wait`` the message goes to another worker, which takes the dead worker's lease over
and resumes the run from its checkpoint. A message delivered more than ``max_deliver``
times (each earlier worker died holding it) is recorded as a failed run and acked.

A delivery's number is JetStream's ``num_delivered``, never lower than the deliveries of
that message this worker saw plus one: a nats-server 2.9 (Debian 12's) that redelivers a
nak'ed message into a pull request that just expired numbers the next delivery 1 again
(its own count goes on, so the one after is right), which would grant an extra attempt
and record the wrong reason (``DeliveryCounts``).

SIGTERM or SIGINT stops pulling and sets the runtime's cancel event: runs in flight stop
after their current batch, their messages are nak'ed for another worker, and the process
exits 0; a second signal exits at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections import OrderedDict
from pathlib import Path
from typing import Any

from nats.errors import TimeoutError as FetchTimeout

from headwater.config.events import NATS_URL
from headwater.executor.nats_queue import (
    CONSUMER,
    FAILURES,
    RunMessage,
    connect,
    consumer_config,
    ensure_stream,
    unreachable,
)
from headwater.executor.nats_run import Verdict, give_up, handle
from headwater.manifest.liveness import WORKER, Heartbeat
from headwater.manifest.owners import lease_owner
from headwater.runtime import Runtime

log = logging.getLogger("headwater.executor")

FETCH_WAIT_S = 1.0  # how long one pull waits for a message (a stop is noticed this fast)
IN_PROGRESS_MAX_S = 10.0
REMEMBERED_MESSAGES = 4096  # messages whose deliveries a worker counts itself


MessageKey = tuple[int, str]  # stream sequence and Nats-Msg-Id (a stream made again reuses seqs)


class DeliveryCounts:
    """The delivery number of each message this worker was handed: the server's, or one
    more than the last this worker saw of the message when the server's is not higher."""

    def __init__(self, remembered: int = REMEMBERED_MESSAGES) -> None:
        self.remembered = remembered
        self._seen: OrderedDict[MessageKey, int] = OrderedDict()

    def number(self, message: MessageKey, reported: int) -> int:
        """The number of this delivery of ``message``."""
        delivered = max(reported, self._seen.pop(message, 0) + 1)
        self._seen[message] = delivered
        if len(self._seen) > self.remembered:
            self._seen.popitem(last=False)
        return delivered

    def done(self, message: MessageKey) -> None:
        """Forget a message that was acked: it is not delivered again."""
        self._seen.pop(message, None)


def in_progress_every(ack_wait: float) -> float:
    """How often a running message is reported in progress: well inside ``ack_wait``."""
    return min(IN_PROGRESS_MAX_S, ack_wait / 3)


class NatsWorker:
    """Pull run messages and handle them until stopped."""

    def __init__(self, config: Path, *, concurrency: int = 1, name: str | None = None) -> None:
        self.config, self.concurrency = config, concurrency
        self.name = name or lease_owner()
        self.rt = Runtime.open(config)
        self.executor = self.rt.config.executor
        self.tenant = self.rt.config.workspace.tenant
        self._stop: asyncio.Event | None = None
        self._signals = 0
        self._deliveries = DeliveryCounts()

    def run(self) -> int:
        """Consume until SIGTERM or SIGINT; the exit code (0)."""
        heartbeat = Heartbeat(lambda: self.rt.manifest.engine, lease_owner(), WORKER).start()
        try:
            asyncio.run(self._main())
        finally:
            heartbeat.stop()
            self.rt.close()
        log.info("worker %s stopped", self.name)
        return 0

    def _on_signal(self, signum: int) -> None:
        self._signals += 1
        if self._signals > 1:
            log.warning("%s again: exiting now", signal.Signals(signum).name)
            os._exit(128 + signum)
        log.warning(
            "%s: stopping; runs in flight stop after their current batch and go back to "
            "the queue; send it again to exit at once",
            signal.Signals(signum).name,
        )
        self.rt.controls.cancel.set()
        if self._stop is not None:
            self._stop.set()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._on_signal, signum)
        try:
            nc = await connect(self.executor.url or NATS_URL)
        except FAILURES as exc:
            raise unreachable(self.executor, exc) from exc
        try:
            js = nc.jetstream(timeout=5.0)
            await ensure_stream(js, self.executor)
            config = consumer_config(self.executor)
            subs = [
                await js.pull_subscribe(
                    config.filter_subject or "",
                    durable=CONSUMER,
                    stream=self.executor.stream,
                    config=config,
                )
                for _ in range(self.concurrency)
            ]
            log.info(
                "worker %s consuming %s (stream %s) with %d slot(s)",
                self.name,
                config.filter_subject,
                self.executor.stream,
                self.concurrency,
            )
            await asyncio.gather(*(self._slot(sub) for sub in subs))
        finally:
            await nc.close()

    async def _slot(self, sub: Any) -> None:
        assert self._stop is not None
        while not self._stop.is_set():
            try:
                msgs = await sub.fetch(1, timeout=FETCH_WAIT_S)
            except FetchTimeout:
                continue
            except FAILURES as exc:  # NATS restarts: try again shortly
                log.warning("pulling from NATS failed (%s); retrying", exc)
                await asyncio.sleep(FETCH_WAIT_S)
                continue
            for msg in msgs:
                await self._handle(msg)

    async def _handle(self, msg: Any) -> None:
        try:
            message = RunMessage.parse(msg.data)
        except ValueError as exc:
            log.error("dropping a message that is no run message (%s)", exc)
            await msg.term()
            return
        key = _key(msg)
        reported = int(msg.metadata.num_delivered)
        delivered = self._deliveries.number(key, reported)
        if delivered != reported:
            log.warning("JetStream numbered a delivery of %s %d; this worker saw %d before it",
                        message.source_id, reported, delivered - 1)  # fmt: skip
        msg_id = key[1]
        if delivered > self.executor.max_deliver:
            reason = (
                f"no worker finished the run message in {delivered - 1} deliveries (each "
                "worker died or went past [executor] ack_wait without reporting progress); "
                "the NATS executor gave up on it"
            )
            run_id = await asyncio.to_thread(give_up, self.rt, message.source_id, reason)
            log.error("gave up on %s after %d deliveries (run %s failed)",
                      message.source_id, delivered - 1, run_id)  # fmt: skip
            await msg.ack()
            self._deliveries.done(key)
            return
        log.info("delivery %d of %s (%s, after run %s)",
                 delivered, message.source_id, message.reason, message.after_run)  # fmt: skip
        ticker = asyncio.create_task(self._keep_alive(msg))
        try:
            verdict = await asyncio.to_thread(handle, self.rt, message, msg_id, delivered)
        except Exception as exc:  # the manifest went away while recording: try later
            verdict = Verdict(False, f"handling failed: {exc}", 5.0)
        finally:
            ticker.cancel()
        await self._answer(msg, verdict)

    async def _answer(self, msg: Any, verdict: Verdict) -> None:
        try:
            if verdict.ack:
                await msg.ack()
                self._deliveries.done(_key(msg))
                log.info("acked: %s", verdict.note)
            else:
                await msg.nak(delay=verdict.delay_s or None)
                log.info("nak'ed (again in %.1f s): %s", verdict.delay_s, verdict.note)
        except FAILURES as exc:  # unanswered: redelivered after ack_wait, and handled again
            log.warning("could not answer a message (%s): %s", exc, verdict.note)

    async def _keep_alive(self, msg: Any) -> None:
        every = in_progress_every(self.executor.ack_wait)
        while True:
            await asyncio.sleep(every)
            try:
                await msg.in_progress()
            except FAILURES as exc:
                log.warning("in-progress report not sent: %s", exc)


def _key(msg: Any) -> MessageKey:
    """The message's stream sequence and id (the stream's sequence when it has none)."""
    seq = int(msg.metadata.sequence.stream)
    return seq, (msg.headers or {}).get("Nats-Msg-Id", f"seq-{seq}")


def run_worker(config: Path, *, concurrency: int = 1, name: str | None = None) -> int:
    """Run a NATS worker for the workspace at ``config``; its exit code."""
    return NatsWorker(config, concurrency=concurrency, name=name).run()
