"""Index generations in the manifest: which generation of each index is live, and which
are being built, kept for rollback or gone.

Each configured index is a sequence of generations ``main@1``, ``main@2``…, each with the
index version and the (non-secret) settings it was built with. Exactly one generation
per index is ``live``; searches read it. The applied revisions of a generation are the
``document_indexes`` rows under its *key*: the bare index name for generation 1 (so rows
written before generations existed are generation 1), ``{index}@{N}`` otherwise. Pending
work for a generation is therefore the same query as before.

States: ``building`` (being filled from the content store), ``verifying``, ``ready``
(verified, waiting for a switch), ``live``, ``previous`` (was live; kept for rollback),
``failed`` (verification failed; the problems are recorded), ``retired`` (dropped). Every
generation in a *write state* (building, verifying, ready, live) receives every change.
A switch is one manifest transaction, so a reader sees one live generation or the other.

Every state change is conditional (``UPDATE … WHERE state IN (the states it may come
from)``, see ``ENTERED_FROM``), so two processes never both win: a ``cancel`` that retired
a generation while its rebuild ran in another process stays retired (the rebuild's next
step finds nothing to change and stops), a retired generation never becomes verifying,
ready or live, and ``switch`` makes live only a ``ready`` generation (``rollback``: a
``previous`` one).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Select, bindparam, select, update
from sqlalchemy.exc import IntegrityError

from headwater.clock import utcnow
from headwater.errors import ConfigError, NotFoundError
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.driver_sql import driver_statement

g = t.generations

BUILDING = "building"
VERIFYING = "verifying"
READY = "ready"
LIVE = "live"
PREVIOUS = "previous"
FAILED = "failed"
RETIRED = "retired"
WRITE_STATES = (BUILDING, VERIFYING, READY, LIVE)
IN_PROGRESS = (BUILDING, VERIFYING, READY)

# The states each state may be entered from; anything else is refused (the row moved on).
ENTERED_FROM: dict[str, tuple[str, ...]] = {
    BUILDING: IN_PROGRESS,  # a (resumed) build, or the catch-up of a switch
    VERIFYING: IN_PROGRESS,
    READY: (VERIFYING,),
    FAILED: (VERIFYING,),
    LIVE: (READY, PREVIOUS),  # a switch, a rollback
    PREVIOUS: (LIVE,),
    RETIRED: (BUILDING, VERIFYING, READY, PREVIOUS, FAILED),  # never the live one
}


def generation_key(index_name: str, generation: int) -> str:
    """The name a generation's applied revisions and failures are recorded under."""
    return index_name if generation == 1 else f"{index_name}@{generation}"


@dataclass(frozen=True)
class Generation:
    """One generation of an index: number, state, index version, settings and times."""

    index_name: str
    generation: int
    state: str
    index_version: str
    settings: dict[str, Any]
    created_at: datetime
    switched_at: datetime | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The name its applied revisions and failures are recorded under."""
        return generation_key(self.index_name, self.generation)

    @property
    def label(self) -> str:
        """``index@generation``, as messages show it."""
        return f"{self.index_name}@{self.generation}"

    @classmethod
    def from_row(cls, row: Any) -> Generation:
        """The generation of a ``generations`` row."""
        return cls.from_mapping(row._mapping)

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any]) -> Generation:
        """The generation of a ``generations`` row given as column name → value."""
        return cls(
            index_name=m["index_name"],
            generation=int(m["generation"]),
            state=m["state"],
            index_version=m["index_version"],
            settings=json.loads(m["settings"]),
            created_at=m["created_at"],
            switched_at=m["switched_at"],
            problems=list(json.loads(m["problems"])),
        )


def _live() -> Select[Any]:
    """The live generation of the index named ``name`` (the first, should there be two)."""
    return (
        select(g)
        .where(g.c.index_name == bindparam("name"), g.c.state == LIVE)
        .order_by(g.c.generation)
    )


class Generations:
    """The ``generations`` table."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def all(self, index_name: str | None = None) -> list[Generation]:
        """Every generation, or those of ``index_name``, by index name and number."""
        query = select(g).order_by(g.c.index_name, g.c.generation)
        if index_name is not None:
            query = query.where(g.c.index_name == index_name)
        with self.engine.connect() as conn:
            return [Generation.from_row(r) for r in conn.execute(query)]

    def get(self, index_name: str, generation: int) -> Generation:
        """The generation ``generation`` of ``index_name`` (NotFoundError when there is none)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(g).where(g.c.index_name == index_name, g.c.generation == generation)
            ).first()
        if row is None:
            raise NotFoundError(
                f"index {index_name!r} has no generation {generation}; "
                "see `headwater rebuild status` for its generations."
            )
        return Generation.from_row(row)

    def live(self, index_name: str) -> Generation | None:
        """The live generation of ``index_name``, or None (every search asks: compiled
        once, ``driver_sql``)."""
        query = driver_statement(self.engine.dialect, "live_generation", _live)
        rows = query.read(self.engine, {"name": index_name})
        return (
            Generation.from_mapping(dict(zip(g.c.keys(), rows[0], strict=True))) if rows else None
        )

    def list(self, index_name: str | None = None) -> builtins.list[Generation]:
        """The same as ``all``."""
        return self.all(index_name)

    def writable(self, index_name: str) -> builtins.list[Generation]:
        """Every generation of the index that receives writes (live and in progress)."""
        return [x for x in self.all(index_name) if x.state in WRITE_STATES]

    def in_progress(self, index_name: str) -> Generation | None:
        """The newest generation of ``index_name`` still being built, or None."""
        found = [x for x in self.all(index_name) if x.state in IN_PROGRESS]
        return found[-1] if found else None

    def ensure_live(self, index_name: str, index_version: str, settings: dict[str, Any]) -> None:
        """Record generation 1 as live when the index has no generation yet."""
        if self.all(index_name):
            return
        now = utcnow()
        try:
            with begin_write(self.engine) as conn:
                conn.execute(
                    g.insert().values(
                        index_name=index_name,
                        generation=1,
                        state=LIVE,
                        index_version=index_version,
                        settings=json.dumps(settings, sort_keys=True),
                        created_at=now,
                        switched_at=now,
                        problems="[]",
                    )
                )
        except IntegrityError:
            pass  # another process recorded it first

    def create(self, index_name: str, index_version: str, settings: dict[str, Any]) -> Generation:
        """A new ``building`` generation numbered after every earlier one."""
        with begin_write(self.engine) as conn:
            numbers = conn.execute(
                select(g.c.generation).where(g.c.index_name == index_name)
            ).scalars()
            number = max(numbers, default=0) + 1
            conn.execute(
                g.insert().values(
                    index_name=index_name,
                    generation=number,
                    state=BUILDING,
                    index_version=index_version,
                    settings=json.dumps(settings, sort_keys=True),
                    created_at=utcnow(),
                    switched_at=None,
                    problems="[]",
                )
            )
        return self.get(index_name, number)

    def set_state(
        self,
        index_name: str,
        generation: int,
        state: str,
        problems: Sequence[str] = (),
        *,
        entered_from: Sequence[str] | None = None,
    ) -> bool:
        """Move the generation to ``state`` if it is in one of ``entered_from`` (default
        ``ENTERED_FROM[state]``), in one conditional statement. False: it was not (another
        process moved it: cancelled, switched), and nothing changed."""
        allowed = list(ENTERED_FROM[state] if entered_from is None else entered_from)
        with begin_write(self.engine) as conn:
            done = conn.execute(
                update(g)
                .where(
                    g.c.index_name == index_name,
                    g.c.generation == generation,
                    g.c.state.in_(allowed),
                )
                .values(state=state, problems=json.dumps(list(problems)))
            )
            return bool(done.rowcount == 1)

    def switch(self, index_name: str, generation: int, *, entered_from: str = READY) -> None:
        """Make ``generation`` live and the live one ``previous``, in one transaction; only
        from ``entered_from`` (``ready``; a rollback: ``previous``). Anything else (a
        generation cancelled meanwhile, one still building) raises ConfigError and
        nothing changes."""
        now = utcnow()
        with begin_write(self.engine) as conn:
            done = conn.execute(
                update(g)
                .where(
                    g.c.index_name == index_name,
                    g.c.generation == generation,
                    g.c.state == entered_from,
                )
                .values(state=LIVE, switched_at=now, problems="[]")
            )
            if done.rowcount != 1:
                row = conn.execute(
                    select(g.c.state).where(
                        g.c.index_name == index_name, g.c.generation == generation
                    )
                ).first()
                if row is None:
                    raise NotFoundError(
                        f"index {index_name!r} has no generation {generation}; nothing "
                        "switched. See `headwater rebuild status`."
                    )
                raise ConfigError(
                    f"{index_name}@{generation} is {row[0]}, not {entered_from}; nothing "
                    f"switched, and {index_name!r} keeps serving its live generation. See "
                    f"`headwater rebuild status`; build a new one with "
                    f"`headwater rebuild {index_name}`."
                )
            conn.execute(
                update(g)
                .where(
                    g.c.index_name == index_name,
                    g.c.state == LIVE,
                    g.c.generation != generation,
                )
                .values(state=PREVIOUS)
            )

    def previous(self, index_name: str) -> Generation:
        """The generation a rollback returns to: the most recently switched-away one."""
        kept = [x for x in self.all(index_name) if x.state == PREVIOUS]
        if not kept:
            raise ConfigError(
                f"index {index_name!r} has no previous generation to roll back to; "
                "see `headwater rebuild status`."
            )
        return max(kept, key=lambda x: (x.switched_at or x.created_at, x.generation))
