"""Events on NATS JetStream: publishing with de-duplication, and ``events tail``.

The stream (``[events] stream``) is created on first use with the subjects
``<subject_prefix>.>`` and a two-minute de-duplication window; an existing stream is used
as it is. Each event is published with the header ``Nats-Msg-Id`` (``payload.message_id``)
and awaited until JetStream acknowledged it, so a publish repeated after a crash (sent,
not yet removed from the outbox) is dropped by the server as a duplicate. nats-py is
asynchronous: a session runs its own event loop in the calling thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import nats
from nats.errors import Error as NatsError
from nats.js.api import DeliverPolicy, StreamConfig
from nats.js.errors import NotFoundError

from headwater.errors import TransientError
from headwater.events.payload import event_body, message_id, subject_of
from headwater.manifest.outbox import OutboxEvent

log = logging.getLogger(__name__)

DUPLICATE_WINDOW_S = 120.0
FAILURES = (NatsError, OSError, asyncio.TimeoutError)


async def _quiet(exc: Exception) -> None:
    log.debug("nats: %s", exc)


async def connect(url: str, timeout: float) -> Any:
    """A NATS connection to ``url`` that gives up quickly (a drain just ends, the events
    wait). nats-py waits forever with ``max_reconnect_attempts=0`` or
    ``allow_reconnect=False`` when the server refuses: one quick retry, and a deadline."""
    return await asyncio.wait_for(
        nats.connect(
            url,
            connect_timeout=timeout,
            max_reconnect_attempts=1,
            reconnect_time_wait=0.1,
            error_cb=_quiet,
        ),
        timeout * 2 + 1,
    )


async def ensure_stream(js: Any, stream: str, prefix: str) -> None:
    """Create ``stream`` over ``<prefix>.>`` unless it exists."""
    try:
        await js.stream_info(stream)
    except NotFoundError:
        await js.add_stream(
            StreamConfig(name=stream, subjects=[f"{prefix}.>"], duplicate_window=DUPLICATE_WINDOW_S)
        )


def _unreachable(url: str, stream: str, exc: BaseException) -> TransientError:
    return TransientError(
        f"NATS at {url} (stream {stream}) did not take the events ({type(exc).__name__}: "
        f"{exc}); they stay in the outbox and are sent when it answers. Check that "
        "`nats-server -js` runs there and [events] url and stream"
    )


class JetStreamSession:
    """One connection publishing events in order, each awaited until acknowledged."""

    def __init__(self, target: JetStreamTarget) -> None:
        self.target = target
        self.loop = asyncio.new_event_loop()
        self.nc: Any = None
        try:
            self.nc = self.loop.run_until_complete(connect(target.url, target.timeout))
            self.js = self.nc.jetstream(timeout=target.timeout)
            self.loop.run_until_complete(ensure_stream(self.js, target.stream, target.prefix))
        except FAILURES as exc:
            self.close()
            raise _unreachable(target.url, target.stream, exc) from exc

    def send(self, event: OutboxEvent) -> None:
        """Publish ``event`` and wait for JetStream's acknowledgement."""
        t = self.target
        try:
            self.loop.run_until_complete(
                self.js.publish(
                    subject_of(t.prefix, t.tenant, event),
                    event_body(t.tenant, event),
                    stream=t.stream,
                    headers={"Nats-Msg-Id": message_id(event)},
                )
            )
        except FAILURES as exc:
            raise _unreachable(t.url, t.stream, exc) from exc

    def close(self) -> None:
        """Close the connection and the event loop."""
        try:
            if self.nc is not None and not self.nc.is_closed:
                self.loop.run_until_complete(self.nc.close())
        except FAILURES as exc:
            log.debug("closing the NATS connection: %s", exc)
        finally:
            self.loop.close()


class JetStreamTarget:
    """``[events] type = "nats"``: a JetStream stream at ``url``."""

    kind = "nats"

    def __init__(
        self, url: str, stream: str, prefix: str, tenant: str, *, timeout: float = 2.0
    ) -> None:
        self.url, self.stream, self.prefix, self.tenant = url, stream, prefix, tenant
        self.timeout = timeout

    def open(self) -> JetStreamSession:
        """A connection for one drain (``TransientError`` when NATS does not answer)."""
        return JetStreamSession(self)


async def _tail(
    url: str,
    stream: str,
    prefix: str,
    subject: str,
    on_event: Callable[[str, dict[str, Any]], bool],
    ready: Callable[[], None],
) -> None:
    nc = await connect(url, 5.0)
    try:
        js = nc.jetstream()
        await ensure_stream(js, stream, prefix)
        sub = await js.subscribe(subject, stream=stream, deliver_policy=DeliverPolicy.NEW)
        ready()
        while True:
            msg = await sub.next_msg(timeout=None)
            await msg.ack()
            if not on_event(msg.subject, json.loads(msg.data)):
                return
    finally:
        await nc.close()


def tail(
    url: str,
    stream: str,
    prefix: str,
    subject: str,
    on_event: Callable[[str, dict[str, Any]], bool],
    ready: Callable[[], None] = lambda: None,
) -> None:
    """Call ``on_event(subject, payload)`` for each event published from now on whose
    subject matches ``subject``, until it returns False. ``ready`` is called once the
    consumer exists (events from then on are seen). ``TransientError`` if NATS is down."""
    try:
        asyncio.run(_tail(url, stream, prefix, subject, on_event, ready))
    except FAILURES as exc:
        raise _unreachable(url, stream, exc) from exc
