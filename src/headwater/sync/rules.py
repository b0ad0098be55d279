"""Sync rules: a source's ordered ``[[source.rules]]``, first match wins.

Each rule is ``include = {…}`` or ``exclude = {…}``; its conditions must all hold. The
runner asks ``RuleSet.decide`` about every document the connector lists, before any
content is fetched: an excluded one is never read, and one the manifest holds is deleted
with reason ``excluded_by_config`` (a deliberate change of scope, not counted against
``prune_max_fraction``). A document no rule matches is kept as the connector's own
``include``/``exclude`` globs selected it. The tables are parsed here, once, into
compiled conditions; every problem is a ``ConfigError`` naming the rule.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from headwater.clock import as_utc, utcnow
from headwater.connectors.globs import compile_glob
from headwater.errors import ConfigError
from headwater.types import SourceDocument
from headwater.units import parse_duration, parse_size

CONDITIONS = (
    "path",
    "title_matches",
    "media_type",
    "size_over",
    "size_under",
    "modified_before",
    "modified_after",
    "metadata",
)
INCLUDE, EXCLUDE = "include", "exclude"

Moment = timedelta | datetime  # a duration ago, or a point in time


@dataclass(frozen=True)
class Conditions:
    """One rule's conditions, compiled; None: no condition on that field."""

    path: re.Pattern[str] | None = None
    title: re.Pattern[str] | None = None
    media_type: str | None = None
    size_over: int | None = None
    size_under: int | None = None
    modified_before: Moment | None = None
    modified_after: Moment | None = None
    metadata: tuple[tuple[str, str], ...] = ()

    def holds(self, doc: SourceDocument, now: datetime) -> bool:
        """Whether every condition holds for ``doc`` (an unknown value holds none)."""
        return all(check(doc, now) for check in self._checks())

    def _checks(self) -> Iterator[Any]:
        if self.path is not None:
            path = self.path
            yield lambda d, _n: bool(path.fullmatch(d.object_id))
        if self.title is not None:
            title = self.title
            yield lambda d, _n: bool(title.search(title_of(d)))
        if self.media_type is not None:
            wanted = self.media_type
            yield lambda d, _n: _media_matches(d.media_type, wanted)
        if self.size_over is not None:
            over = self.size_over
            yield lambda d, _n: (s := size_of(d)) is not None and s > over
        if self.size_under is not None:
            under = self.size_under
            yield lambda d, _n: (s := size_of(d)) is not None and s < under
        if self.modified_before is not None:
            before = self.modified_before
            yield lambda d, n: d.updated_at is not None and as_utc(d.updated_at) < _at(before, n)
        if self.modified_after is not None:
            after = self.modified_after
            yield lambda d, n: d.updated_at is not None and as_utc(d.updated_at) > _at(after, n)
        for key, value in self.metadata:
            yield lambda d, _n, k=key, v=value: _metadata_matches(d.metadata.get(k), v)


@dataclass(frozen=True)
class Rule:
    """One rule: ``include`` or ``exclude`` when its conditions hold; ``index`` from 0."""

    index: int
    action: str
    conditions: Conditions


@dataclass(frozen=True)
class Verdict:
    """What the rules say of one document: the action and the rule that decided."""

    action: str
    rule: int


@dataclass(frozen=True)
class RuleSet:
    """A source's rules in order; empty: every listed document is kept."""

    rules: tuple[Rule, ...] = ()

    @classmethod
    def from_tables(cls, tables: Sequence[Mapping[str, Any]]) -> RuleSet:
        """The rules of ``[[source.rules]]`` tables; ConfigError naming the bad rule."""
        return cls(tuple(_rule(n, table) for n, table in enumerate(tables)))

    def decide(self, doc: SourceDocument, now: datetime | None = None) -> Verdict | None:
        """The first rule whose conditions all hold, or None when no rule matches."""
        moment = now or utcnow()
        for rule in self.rules:
            if rule.conditions.holds(doc, moment):
                return Verdict(rule.action, rule.index)
        return None

    def excludes(self, doc: SourceDocument, now: datetime | None = None) -> bool:
        """Whether the first matching rule excludes ``doc``."""
        verdict = self.decide(doc, now)
        return verdict is not None and verdict.action == EXCLUDE


def title_of(doc: SourceDocument) -> str:
    """The title a rule matches: the connector's, else the last segment of the id."""
    return doc.title or doc.object_id.rsplit("/", 1)[-1]


def size_of(doc: SourceDocument) -> int | None:
    """The object's size in bytes as listed (None when the listing does not say)."""
    if doc.size is not None:
        return doc.size
    if doc.content is not None:
        return len(doc.content)
    listed = doc.metadata.get("size")
    return int(listed) if isinstance(listed, str) and listed.isdigit() else None


def _media_matches(media_type: str | None, wanted: str) -> bool:
    if media_type is None:
        return False
    return fnmatch.fnmatchcase(media_type.split(";")[0].strip().lower(), wanted)


def _metadata_matches(held: object, wanted: str) -> bool:
    if isinstance(held, list | tuple):
        return wanted in [str(v) for v in held]
    return held is not None and str(held) == wanted


def _at(moment: Moment, now: datetime) -> datetime:
    return now - moment if isinstance(moment, timedelta) else moment


def _rule(index: int, table: Mapping[str, Any]) -> Rule:
    where = f"rule {index + 1} (rules[{index}])"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} is {table!r}; expected a table such as include = {{ ... }}")
    actions = [k for k in (INCLUDE, EXCLUDE) if k in table]
    unknown = sorted(set(table) - {INCLUDE, EXCLUDE})
    if unknown or len(actions) != 1:
        raise ConfigError(
            f"{where} has keys {sorted(table)}; expected exactly one of `include` or "
            '`exclude`, e.g. exclude = { size_over = "50MB" }'
        )
    action = actions[0]
    conditions = table[action]
    if not isinstance(conditions, Mapping) or not conditions:
        raise ConfigError(
            f"{where}: `{action}` is {conditions!r}; expected a table of conditions, "
            f'e.g. {action} = {{ path = "wiki/**" }}'
        )
    return Rule(index, action, _conditions(f"{where}.{action}", conditions))


def _conditions(where: str, table: Mapping[str, Any]) -> Conditions:
    unknown = sorted(set(table) - set(CONDITIONS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown condition {', '.join(map(repr, unknown))}; expected any of "
            f"{', '.join(CONDITIONS)}"
        )
    found: dict[str, Any] = {}
    for key, value in table.items():
        found.update(_condition(f"{where}.{key}", key, value))
    return Conditions(**found)


def _condition(where: str, key: str, value: Any) -> dict[str, Any]:
    if key == "metadata":
        if not isinstance(value, Mapping) or not value:
            raise ConfigError(f"{where} is {value!r}; expected a table of key = value")
        pairs = tuple(sorted((str(k), _scalar(f"{where}.{k}", v)) for k, v in value.items()))
        return {"metadata": pairs}
    if key in ("size_over", "size_under"):
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ConfigError(f'{where} is {value!r}; expected a size such as "50MB"')
        try:
            size = parse_size(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        return {key: size}
    if key in ("modified_before", "modified_after"):
        return {key: _moment(where, value)}
    text = _scalar(where, value)
    if key == "path":
        return {"path": compile_glob(text)}
    if key == "title_matches":
        try:
            return {"title": re.compile(text)}
        except re.error as exc:
            raise ConfigError(
                f"{where}: {text!r} is not a valid regular expression ({exc}); fix the "
                "pattern (Python `re` syntax)"
            ) from None
    return {"media_type": text.lower()}


def _scalar(where: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(f"{where} is {value!r}; expected a string")
    return str(value)


def _moment(where: str, value: Any) -> Moment:
    if isinstance(value, datetime):
        return as_utc(value) if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        try:
            ago = parse_duration(value)
        except ValueError:
            ago = None
        if ago is not None:
            return ago
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return as_utc(moment) if moment.tzinfo else moment.replace(tzinfo=UTC)
    raise ConfigError(
        f'{where} is {value!r}; expected a duration ago ("30d", "12h", "2w") or a '
        'date ("2024-01-31" or "2024-01-31T12:00:00Z")'
    )
