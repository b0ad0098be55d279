"""A NATS worker's delivery numbers never go back: nats-server 2.9 can number the
redelivery of a nak'ed message 1 again (a race with a pull request that just expired,
seen in this suite's max_deliver test), and the worker then counts the delivery itself."""

from __future__ import annotations

import asyncio
import itertools
import uuid

import nats
from nats.errors import TimeoutError as FetchTimeout
from nats.js.api import AckPolicy, ConsumerConfig
from nats_deployment import NATS_URL

from headwater.executor.nats_worker import DeliveryCounts

A, B = (7, "files:first"), (8, "notes:first")


def test_the_servers_number_is_kept_while_it_goes_up() -> None:
    counts = DeliveryCounts()
    assert [counts.number(A, n) for n in (1, 2, 3)] == [1, 2, 3]
    assert counts.number(B, 1) == 1  # another message counts on its own


def test_a_delivery_numbered_lower_than_one_seen_counts_as_the_next() -> None:
    counts = DeliveryCounts()
    assert counts.number(A, 1) == 1
    assert counts.number(A, 2) == 2
    assert counts.number(A, 1) == 3  # the server's slip: this is the third delivery
    assert counts.number(A, 4) == 4  # the server's own count went on: it is right again
    assert counts.number(A, 2) == 5


def test_an_acked_message_is_forgotten_and_memory_stays_bounded() -> None:
    counts = DeliveryCounts(remembered=3)
    counts.number(A, 1)
    counts.done(A)
    assert counts.number(A, 1) == 1  # forgotten once acked
    for seq in range(2, 7):
        counts.number((seq, "m"), 2)
    assert counts.number(A, 1) == 1  # the oldest fell out: the server's number again
    assert counts.number((6, "m"), 1) == 3  # the newest is still counted
    assert len(counts._seen) == 3


def test_a_message_of_a_stream_made_again_is_another_message() -> None:
    counts = DeliveryCounts()
    assert counts.number((1, "files:run-1"), 3) == 3
    assert counts.number((1, "files:run-2"), 1) == 1  # sequence 1 again, another message


def test_on_the_real_jetstream_the_numbers_only_go_up_while_naks_race_pull_expiries() -> None:
    """One message nak'ed with a delay twice a pull request's expiry, on the JetStream at
    127.0.0.1:4222: the server may number a redelivery 1 again (2.9 does, about one
    delivery in five here), the worker's numbers still rise at every delivery."""
    numbers = asyncio.run(_nak_repeatedly(deliveries=60, pull_s=0.05, nak_delay_s=0.1))
    assert all(b > a for a, b in itertools.pairwise(numbers)), numbers
    assert all(n >= i for i, n in enumerate(numbers, start=1)), numbers


async def _nak_repeatedly(deliveries: int, pull_s: float, nak_delay_s: float) -> list[int]:
    nc = await nats.connect(NATS_URL)
    js, tag = nc.jetstream(), uuid.uuid4().hex[:12]
    stream = f"HWCOUNT_{tag}"
    await js.add_stream(name=stream, subjects=[f"hwcount{tag}.>"])
    try:
        await js.publish(f"hwcount{tag}.run", b"{}")
        config = ConsumerConfig(
            durable_name="workers", ack_policy=AckPolicy.EXPLICIT, ack_wait=30, max_deliver=-1
        )
        sub = await js.pull_subscribe(
            f"hwcount{tag}.>", durable="workers", stream=stream, config=config
        )
        counts, numbers = DeliveryCounts(), []
        while len(numbers) < deliveries:
            try:
                msgs = await sub.fetch(1, timeout=pull_s)
            except FetchTimeout:
                continue
            for msg in msgs:
                key = (int(msg.metadata.sequence.stream), "run")
                numbers.append(counts.number(key, int(msg.metadata.num_delivered)))
                await msg.nak(delay=nak_delay_s)
        return numbers
    finally:
        await js.delete_stream(stream)
        await nc.close()
