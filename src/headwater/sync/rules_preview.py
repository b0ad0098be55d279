"""``headwater rules test``: what a source's rules would do to a live listing.

The connector reads from the beginning (no checkpoint, no window start, nothing known,
so nothing is skipped by version) and each listed document is decided by the rules as a
sync would, up to a limit; no content is fetched and nothing is written (no manifest,
no checkpoint, no index). The listing stops at the limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from headwater.clock import utcnow
from headwater.connectors.base import Connector
from headwater.sync.rules import EXCLUDE, INCLUDE, RuleSet, size_of, title_of
from headwater.types import Failure, SourceDocument, Window


@dataclass(frozen=True)
class RuleDecision:
    """One listed document and what the rules decide of it."""

    object_id: str
    title: str
    decision: str  # include or exclude
    rule: int | None  # the deciding rule's index (from 0), None: no rule matched
    media_type: str | None
    size: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "object_id": self.object_id,
            "title": self.title,
            "decision": self.decision,
            "rule": self.rule,
            "media_type": self.media_type,
            "size": self.size,
        }


@dataclass
class RulesPreview:
    """The decisions for the first ``limit`` listed documents of a source."""

    source_id: str
    rules: int
    limit: int
    items: list[RuleDecision] = field(default_factory=list)
    failures: int = 0  # listed objects the connector could not read (not decided)
    complete: bool = True  # False: the listing went on past the limit

    @property
    def included(self) -> int:
        return sum(1 for i in self.items if i.decision == INCLUDE)

    @property
    def excluded(self) -> int:
        return sum(1 for i in self.items if i.decision == EXCLUDE)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source_id,
            "rules": self.rules,
            "limit": self.limit,
            "listed": len(self.items),
            "included": self.included,
            "excluded": self.excluded,
            "failures": self.failures,
            "complete": self.complete,
            "items": [i.as_dict() for i in self.items],
        }


def preview(source_id: str, connector: Connector, rules: RuleSet, limit: int) -> RulesPreview:
    """Decide the first ``limit`` documents ``connector`` lists; reads nothing else."""
    now = utcnow()
    report = RulesPreview(source_id, len(rules.rules), limit)
    stream = connector.read(Window(None, now), None, lambda _object_id: None)
    try:
        for item in stream:
            if isinstance(item, Failure):
                report.failures += 1
            if not isinstance(item, SourceDocument):
                continue
            if len(report.items) >= limit:
                report.complete = False
                break
            verdict = rules.decide(item, now)
            report.items.append(
                RuleDecision(
                    object_id=item.object_id,
                    title=title_of(item),
                    decision=verdict.action if verdict is not None else INCLUDE,
                    rule=verdict.rule if verdict is not None else None,
                    media_type=item.media_type,
                    size=size_of(item),
                )
            )
    finally:
        stream.close()
    return report
