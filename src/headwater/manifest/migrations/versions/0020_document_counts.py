"""Maintained document counts, so ``status`` never counts the documents table.

``status`` counted each source's documents and each index's pending work with queries
linear in documents (the pending count joined every document to its index row). At 10M
documents that is seconds per call, and the admin chart sampler made it every 30 s. This
migration adds ``document_counts``, kept by triggers in the writer's own transaction:

- ``('docs', source_id, state)``: the source's documents in that state;
- ``('applied', index, pipeline_version)``: index rows of active documents at or above
  the document's revision (the ones an index at that version need not redo);
- ``('stale', index, '')``: index rows of deleted documents below the tombstone's revision.

An index's pending work is then ``active - applied(index, version) + stale(index)``: the
exact set the pending query selects (``manifest/counts.py``). On SQLite (one writer at a
time) the triggers add to one row per key. On PostgreSQL each change appends a row of its
own (``tx`` from the sequence ``document_counts_tx``), so writers never wait on a shared
counter row (nor update one row many times in a transaction, which PostgreSQL makes
quadratic), and readers sum the rows; writers and readers fold them into ``tx = 0`` now
and then (``manifest/counts.py``). A document's revision or state change and an index
row's change classify the pair under one advisory lock per source (a document change
takes its source's exclusively, an index row change shares its document's source's), so
a concurrent ``record_applied`` and revision bump of one document cannot both miss each
other's row; two sources' writers never wait on each other.

Also ``ix_document_indexes_applied_at``: the admin page's chunks-per-minute sampler asks
for the index rows applied since its last sample every 30 s.

On PostgreSQL the whole migration is one transaction (``db.migrate``): it blocks writes
to ``documents`` and ``document_indexes`` while it counts them once; reads go on.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"

LOCK_SPACE = 0x48574443  # "HWDC": pg_advisory_xact_lock(LOCK_SPACE, hashtext(source_id))
UPSERT = (
    "ON CONFLICT (kind, scope, detail, tx) "
    "DO UPDATE SET value = document_counts.value + excluded.value"
)
PG_TX = "nextval('document_counts_tx')"  # one new row per change: no row updated twice


def _tail(tx: str) -> str:
    """SQLite adds to its one row per key; PostgreSQL appends a row (folded later)."""
    return f" {UPSERT};" if tx == "0" else ";"


def _docs(row: str, sign: str, tx: str) -> str:
    return (
        "INSERT INTO document_counts (kind, scope, detail, tx, value) "
        f"VALUES ('docs', {row}.source_id, {row}.state, {tx}, {sign}1){_tail(tx)}"
    )


def _pairs_of_document(row: str, sign: str, tx: str) -> str:
    """The classes of a document's index rows, counted from the document's side."""
    return (
        "INSERT INTO document_counts (kind, scope, detail, tx, value) "
        f"SELECT CASE WHEN {row}.state = 'active' THEN 'applied' ELSE 'stale' END, "
        f"di.index_name, CASE WHEN {row}.state = 'active' THEN di.pipeline_version ELSE '' END, "
        f"{tx}, {sign}1 FROM document_indexes di WHERE di.document_id = {row}.document_id "
        f"AND (({row}.state = 'active' AND di.applied_revision >= {row}.revision) "
        f"OR ({row}.state = 'deleted' AND di.applied_revision < {row}.revision)){_tail(tx)}"
    )


def _pair_of_index_row(row: str, sign: str, tx: str) -> str:
    """The class of one index row, counted from the index row's side."""
    return (
        "INSERT INTO document_counts (kind, scope, detail, tx, value) "
        "SELECT CASE WHEN d.state = 'active' THEN 'applied' ELSE 'stale' END, "
        f"{row}.index_name, CASE WHEN d.state = 'active' THEN {row}.pipeline_version ELSE '' END, "
        f"{tx}, {sign}1 FROM documents d WHERE d.document_id = {row}.document_id "
        f"AND ((d.state = 'active' AND {row}.applied_revision >= d.revision) "
        f"OR (d.state = 'deleted' AND {row}.applied_revision < d.revision)){_tail(tx)}"
    )


DOC_CHANGED = (
    "OLD.source_id IS DISTINCT FROM NEW.source_id OR OLD.state IS DISTINCT FROM NEW.state "
    "OR OLD.revision IS DISTINCT FROM NEW.revision"
)


def _sqlite() -> list[str]:
    doc_old = _docs("OLD", "-", "0") + _pairs_of_document("OLD", "-", "0")
    doc_new = _docs("NEW", "", "0") + _pairs_of_document("NEW", "", "0")
    di_old, di_new = _pair_of_index_row("OLD", "-", "0"), _pair_of_index_row("NEW", "", "0")
    changed = DOC_CHANGED.replace("IS DISTINCT FROM", "IS NOT")
    return [
        f"CREATE TRIGGER hw_counts_doc_ins AFTER INSERT ON documents BEGIN {doc_new} END",
        f"CREATE TRIGGER hw_counts_doc_del AFTER DELETE ON documents BEGIN {doc_old} END",
        "CREATE TRIGGER hw_counts_doc_upd AFTER UPDATE OF source_id, state, revision "
        f"ON documents WHEN {changed} BEGIN {doc_old} {doc_new} END",
        f"CREATE TRIGGER hw_counts_di_ins AFTER INSERT ON document_indexes BEGIN {di_new} END",
        f"CREATE TRIGGER hw_counts_di_del AFTER DELETE ON document_indexes BEGIN {di_old} END",
        "CREATE TRIGGER hw_counts_di_upd AFTER UPDATE ON document_indexes "
        f"BEGIN {di_old} {di_new} END",
    ]


def _postgres() -> list[str]:
    tx = PG_TX

    def lock(source: str, mode: str) -> str:
        return f"PERFORM pg_advisory_xact_lock{mode}({LOCK_SPACE}, hashtext({source}));"

    doc_body = (
        f"IF TG_OP <> 'INSERT' THEN {lock('OLD.source_id', '')} {_docs('OLD', '-', tx)} "
        f"{_pairs_of_document('OLD', '-', tx)} END IF; "
        f"IF TG_OP <> 'DELETE' THEN {lock('NEW.source_id', '')} {_docs('NEW', '', tx)} "
        f"{_pairs_of_document('NEW', '', tx)} END IF; RETURN NULL;"
    )

    def index_side(row: str, sign: str) -> str:
        # The document's source first (it never changes), its lock, then a fresh read
        # of the document's state and revision under that lock.
        return (
            "SELECT d.source_id INTO src FROM documents d "
            f"WHERE d.document_id = {row}.document_id; "
            f"IF FOUND THEN {lock('src', '_shared')} {_pair_of_index_row(row, sign, tx)} END IF;"
        )

    di_body = (
        f"IF TG_OP <> 'INSERT' THEN {index_side('OLD', '-')} END IF; "
        f"IF TG_OP <> 'DELETE' THEN {index_side('NEW', '')} END IF; RETURN NULL;"
    )
    return [
        "CREATE FUNCTION hw_counts_documents() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN {doc_body} END $$",
        "CREATE FUNCTION hw_counts_document_indexes() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ DECLARE src text; BEGIN {di_body} END $$",
        "CREATE TRIGGER hw_counts_doc AFTER INSERT OR DELETE ON documents "
        "FOR EACH ROW EXECUTE FUNCTION hw_counts_documents()",
        "CREATE TRIGGER hw_counts_doc_upd AFTER UPDATE OF source_id, state, revision "
        f"ON documents FOR EACH ROW WHEN ({DOC_CHANGED}) EXECUTE FUNCTION hw_counts_documents()",
        "CREATE TRIGGER hw_counts_di AFTER INSERT OR DELETE OR UPDATE ON document_indexes "
        "FOR EACH ROW EXECUTE FUNCTION hw_counts_document_indexes()",
    ]


SEED = [
    "INSERT INTO document_counts (kind, scope, detail, tx, value) "
    "SELECT 'docs', source_id, state, 0, COUNT(*) FROM documents GROUP BY source_id, state",
    "INSERT INTO document_counts (kind, scope, detail, tx, value) "
    "SELECT 'applied', di.index_name, di.pipeline_version, 0, COUNT(*) "
    "FROM document_indexes di JOIN documents d ON d.document_id = di.document_id "
    "WHERE d.state = 'active' AND di.applied_revision >= d.revision "
    "GROUP BY di.index_name, di.pipeline_version",
    "INSERT INTO document_counts (kind, scope, detail, tx, value) "
    "SELECT 'stale', di.index_name, '', 0, COUNT(*) "
    "FROM document_indexes di JOIN documents d ON d.document_id = di.document_id "
    "WHERE d.state = 'deleted' AND di.applied_revision < d.revision GROUP BY di.index_name",
]


def upgrade() -> None:
    op.create_table(
        "document_counts",
        sa.Column("kind", sa.String(10), primary_key=True),
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("detail", sa.String(32), primary_key=True),
        sa.Column("tx", sa.BigInteger(), primary_key=True),
        sa.Column("value", sa.BigInteger(), nullable=False),
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        op.execute("CREATE SEQUENCE document_counts_tx")
    # The triggers first: on PostgreSQL creating them locks out writers until this
    # transaction commits, so the seed below counts a table nobody changes meanwhile.
    for statement in _postgres() if postgres else _sqlite():
        op.execute(statement)
    for statement in SEED:
        op.execute(statement)
    op.create_index("ix_document_indexes_applied_at", "document_indexes", ["applied_at"])


def downgrade() -> None:
    op.drop_index("ix_document_indexes_applied_at", table_name="document_indexes")
    for trigger, table in (
        ("hw_counts_doc", "documents"),
        ("hw_counts_doc_ins", "documents"),
        ("hw_counts_doc_del", "documents"),
        ("hw_counts_doc_upd", "documents"),
        ("hw_counts_di_ins", "document_indexes"),
        ("hw_counts_di_del", "document_indexes"),
        ("hw_counts_di_upd", "document_indexes"),
        ("hw_counts_di", "document_indexes"),
    ):
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS hw_counts_documents()")
        op.execute("DROP FUNCTION IF EXISTS hw_counts_document_indexes()")
        op.execute("DROP SEQUENCE IF EXISTS document_counts_tx")
    op.drop_table("document_counts")
