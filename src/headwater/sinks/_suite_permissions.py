"""The permission-change matrix of the conformance suite.

Each row is a change of who may see one document, as the core hands it to a sink: the
document's new ACL (computed by the sync from the source), and the caller's principals
before and after (group memberships expand at search time, so a member removed from a
group, or a deleted group, shows as principals that no longer hold it). Every row runs
twice, once as an ACL-only update (``update_access``) and once as a full replace at the
new revision, and is checked by a search as the affected user in every mode the sink
serves: before the change they see the document, after it they do not, and whoever
keeps access still does.

Rows: public → private; a user removed; a group removed from the document; a member
removed from a group; a group deleted in the source; an ACL that cannot be read (the
core fails closed: the document's ACL becomes nobody, never a guess).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from headwater.sinks._suite_base import EVERYONE, SuiteBase, make_chunks, make_document
from headwater.sinks.base import Sink, WriteOutcome
from headwater.types import Access, caller_principals

OWNER = "owner@example.com"


@dataclass(frozen=True)
class PermissionChange:
    """One row: the ACL before and after, the affected caller before and after, and the
    callers who keep seeing the document."""

    name: str
    before: Access
    after: Access
    affected_before: Sequence[str]
    affected_after: Sequence[str]
    keeps: tuple[Sequence[str], ...] = ()


MATRIX = [
    PermissionChange(
        "public_to_private",
        Access(public=True),
        Access(users=(OWNER,)),
        caller_principals("x@example.com"),
        caller_principals("x@example.com"),
        (caller_principals(OWNER),),
    ),
    PermissionChange(
        "user_removed",
        Access(users=(OWNER, "y@example.com")),
        Access(users=(OWNER,)),
        caller_principals("y@example.com"),
        caller_principals("y@example.com"),
        (caller_principals(OWNER),),
    ),
    PermissionChange(
        "group_removed_from_document",
        Access(groups=("a", "b")),
        Access(groups=("a",)),
        caller_principals("m@example.com", ["b"]),
        caller_principals("m@example.com", ["b"]),
        (caller_principals("n@example.com", ["a"]),),
    ),
    PermissionChange(
        "member_removed_from_group",
        Access(groups=("a",)),
        Access(groups=("a",)),
        caller_principals("m@example.com", ["a"]),
        caller_principals("m@example.com"),
        (caller_principals("n@example.com", ["a"]),),
    ),
    PermissionChange(
        "group_deleted_in_source",
        Access(users=(OWNER,), groups=("gone",)),
        Access(users=(OWNER,)),
        caller_principals("m@example.com", ["gone"]),
        caller_principals("m@example.com"),
        (caller_principals(OWNER),),
    ),
    PermissionChange(
        "acl_unreadable_fails_closed",
        Access(users=(OWNER,), public=True),
        Access.nobody(),
        caller_principals(OWNER),
        [*EVERYONE, f"user:{OWNER}"],
    ),
]


class PermissionMatrixChecks(SuiteBase):
    """Every row of ``MATRIX``, by ACL-only update and by full replace."""

    @pytest.mark.parametrize("how", ["acl_update", "full_replace"])
    @pytest.mark.parametrize("change", MATRIX, ids=[c.name for c in MATRIX])
    def test_permission_change_matrix(self, sink: Sink, change: PermissionChange, how: str) -> None:
        """The affected caller sees the document before the change and not after it;
        whoever keeps access still sees it; the chunks themselves are all still held."""
        doc = make_document(f"matrix-{change.name}", change.before)
        texts = ["matrix lagoon first", "matrix lagoon second"]
        sink.replace(doc, make_chunks(doc, texts), 1)
        for mode in self.modes(sink):
            found = self.find(sink, mode, "matrix lagoon first", change.affected_before)
            assert len(found) == 2, (change.name, mode, "before the change")
        changed = make_document(f"matrix-{change.name}", change.after)
        if how == "acl_update":
            outcome = sink.update_access(doc.document_id, change.after, 2)
        else:
            outcome = sink.replace(changed, make_chunks(changed, texts), 2)
        assert outcome is WriteOutcome.APPLIED, (change.name, how)
        assert sink.revision(doc.document_id) == 2
        assert sink.count(doc.document_id) == 2
        for mode in self.modes(sink):
            found = self.find(sink, mode, "matrix lagoon first", change.affected_after)
            assert found == [], (change.name, how, mode, "the affected caller still sees it")
            for keeper in change.keeps:
                kept = self.find(sink, mode, "matrix lagoon first", keeper)
                assert len(kept) == 2, (change.name, how, mode, "a keeper lost access")
