"""The due decision, table-driven: history, clock and settings in; due list and wake out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from headwater.scheduler.due import (
    FIRST,
    PRUNE,
    RESUME,
    RETRY,
    SYNC,
    Backoff,
    SourceState,
    decide,
    plan_source,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
BACKOFF = Backoff(timedelta(minutes=1), timedelta(hours=1))
HOUR = timedelta(hours=1)


def ago(**kw: float) -> datetime:
    return NOW - timedelta(**kw)


def later(**kw: float) -> datetime:
    return NOW + timedelta(**kw)


CASES = [
    # (name, state, due reason or None, next_due_at, backoff_until)
    ("never ran", SourceState("s", HOUR), FIRST, NOW, None),
    ("refresh passed", SourceState("s", HOUR, last_started_at=ago(minutes=61)), SYNC, NOW, None),
    (
        "refresh exactly now",
        SourceState("s", HOUR, last_started_at=ago(hours=1)),
        SYNC,
        NOW,
        None,
    ),
    (
        "refresh not yet",
        SourceState("s", HOUR, last_started_at=ago(minutes=20)),
        None,
        later(minutes=40),
        None,
    ),
    (
        "paused wins over everything",
        SourceState("s", HOUR, interrupted=True, paused=True),
        None,
        None,
        None,
    ),
    (
        "interrupted run resumes at once",
        SourceState("s", HOUR, last_started_at=ago(seconds=5), interrupted=True),
        RESUME,
        NOW,
        None,
    ),
    (
        "one failure waits failure_backoff",
        SourceState(
            "s",
            HOUR,
            last_started_at=ago(seconds=40),
            consecutive_failures=1,
            last_failure_at=ago(seconds=30),
        ),
        None,
        later(seconds=30),
        later(seconds=30),
    ),
    (
        "three failures wait 4x",
        SourceState(
            "s",
            HOUR,
            last_started_at=ago(minutes=3),
            consecutive_failures=3,
            last_failure_at=ago(minutes=3),
        ),
        None,
        later(minutes=1),
        later(minutes=1),
    ),
    (
        "backoff is capped at backoff_max",
        SourceState(
            "s",
            HOUR,
            last_started_at=ago(minutes=30),
            consecutive_failures=20,
            last_failure_at=ago(minutes=30),
        ),
        None,
        later(minutes=30),
        later(minutes=30),
    ),
    (
        "backoff over: retry even before refresh_every",
        SourceState(
            "s",
            HOUR,
            last_started_at=ago(minutes=2),
            consecutive_failures=1,
            last_failure_at=ago(minutes=2),
        ),
        RETRY,
        NOW,
        None,
    ),
    (
        "held off (lease elsewhere)",
        SourceState("s", HOUR, hold_until=later(seconds=5)),
        None,
        later(seconds=5),
        None,
    ),
    ("hold over", SourceState("s", HOUR, hold_until=ago(seconds=1)), FIRST, NOW, None),
    (
        "prune due before the next sync",
        SourceState(
            "s",
            HOUR,
            prune_every=timedelta(minutes=30),
            can_prune=True,
            last_started_at=ago(minutes=10),
            last_prune_at=ago(minutes=31),
        ),
        PRUNE,
        NOW,
        None,
    ),
    (
        "prune never ran",
        SourceState(
            "s",
            HOUR,
            prune_every=timedelta(days=1),
            can_prune=True,
            last_started_at=ago(minutes=10),
        ),
        PRUNE,
        NOW,
        None,
    ),
    (
        "neither due: wake at the earlier of the two",
        SourceState(
            "s",
            HOUR,
            prune_every=timedelta(minutes=30),
            can_prune=True,
            last_started_at=ago(minutes=10),
            last_prune_at=ago(minutes=20),
        ),
        None,
        later(minutes=10),
        None,
    ),
    (
        "a source that cannot enumerate ignores prune_every",
        SourceState(
            "s",
            HOUR,
            prune_every=timedelta(minutes=1),
            can_prune=False,
            last_started_at=ago(minutes=10),
        ),
        None,
        later(minutes=50),
        None,
    ),
]


@pytest.mark.parametrize(
    ("state", "reason", "next_due", "backoff_until"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_plan_source(
    state: SourceState,
    reason: str | None,
    next_due: datetime | None,
    backoff_until: datetime | None,
) -> None:
    plan = plan_source(state, NOW, BACKOFF)
    assert plan.due is (reason is not None)
    assert plan.reason == reason
    assert plan.next_due_at == next_due
    assert plan.backoff_until == backoff_until
    assert plan.paused is state.paused


@pytest.mark.parametrize(
    ("failures", "wait"),
    [(0, 0), (1, 60), (2, 120), (3, 240), (6, 1920), (7, 3600), (100, 3600)],
)
def test_backoff_doubles_and_caps(failures: int, wait: int) -> None:
    assert BACKOFF.wait(failures) == timedelta(seconds=wait)


def test_decide_keeps_order_and_wakes_at_the_earliest() -> None:
    states = [
        SourceState("a", HOUR, last_started_at=ago(minutes=50)),  # due in 10 min
        SourceState("b", HOUR),  # due now
        SourceState("c", HOUR, last_started_at=ago(minutes=55)),  # due in 5 min
        SourceState("d", HOUR, paused=True),  # never
        SourceState("e", HOUR, interrupted=True),  # due now
    ]
    decision = decide(states, NOW, BACKOFF)
    assert [p.source_id for p in decision.due] == ["b", "e"]
    assert decision.next_wake() == later(minutes=5)
    assert decide([SourceState("d", HOUR, paused=True)], NOW, BACKOFF).next_wake() is None


FIFTEEN = timedelta(minutes=15)
PERMISSION_CASES = [
    # (name, state, content reason or None, permissions due, next_due_at)
    (
        "no permissions_every: never a permission sync",
        SourceState("s", HOUR, last_started_at=ago(minutes=20)),
        None,
        False,
        later(minutes=40),
    ),
    (
        "permissions never synced: due at once",
        SourceState("s", HOUR, last_started_at=ago(minutes=20), permissions_every=FIFTEEN),
        None,
        True,
        later(minutes=40),
    ),
    (
        "permissions_every passed",
        SourceState(
            "s",
            HOUR,
            last_started_at=ago(minutes=20),
            permissions_every=FIFTEEN,
            last_permissions_at=ago(minutes=15),
        ),
        None,
        True,
        later(minutes=40),
    ),
    (
        "permissions not yet: wake at the earlier of content and permissions",
        SourceState(
            "s",
            HOUR,
            last_started_at=ago(minutes=20),
            permissions_every=FIFTEEN,
            last_permissions_at=ago(minutes=5),
        ),
        None,
        False,
        later(minutes=10),
    ),
    (
        "content due and permissions not yet",
        SourceState(
            "s",
            HOUR,
            last_started_at=ago(hours=2),
            permissions_every=FIFTEEN,
            last_permissions_at=ago(minutes=5),
        ),
        SYNC,
        False,
        NOW,
    ),
    (
        "both due",
        SourceState("s", HOUR, permissions_every=FIFTEEN),
        FIRST,
        True,
        NOW,
    ),
    (
        "a paused source gets no permission sync",
        SourceState("s", HOUR, permissions_every=FIFTEEN, paused=True),
        None,
        False,
        None,
    ),
    (
        "held off: permissions wait for the hold too",
        SourceState("s", HOUR, permissions_every=FIFTEEN, hold_until=later(seconds=5)),
        None,
        False,
        later(seconds=5),
    ),
    (
        "a failing content sync does not delay permissions",
        SourceState(
            "s",
            HOUR,
            last_started_at=ago(minutes=3),
            consecutive_failures=3,
            last_failure_at=ago(minutes=3),
            permissions_every=FIFTEEN,
            last_permissions_at=ago(minutes=20),
        ),
        None,
        True,
        later(minutes=1),
    ),
]


@pytest.mark.parametrize(
    ("state", "reason", "permissions", "next_due"),
    [c[1:] for c in PERMISSION_CASES],
    ids=[c[0] for c in PERMISSION_CASES],
)
def test_plan_source_permissions(
    state: SourceState, reason: str | None, permissions: bool, next_due: datetime | None
) -> None:
    plan = plan_source(state, NOW, BACKOFF)
    assert plan.reason == reason
    assert plan.permissions_due is permissions
    assert plan.next_due_at == next_due


def test_a_permission_sync_due_now_is_not_a_future_wake() -> None:
    states = [
        SourceState("a", HOUR, last_started_at=ago(minutes=50), permissions_every=FIFTEEN),
        SourceState(
            "b",
            HOUR,
            last_started_at=ago(minutes=50),
            permissions_every=FIFTEEN,
            last_permissions_at=ago(minutes=12),
        ),
    ]
    decision = decide(states, NOW, BACKOFF)
    assert [p.source_id for p in decision.permissions_due] == ["a"]
    assert decision.due == []
    assert decision.next_wake() == later(minutes=3)
