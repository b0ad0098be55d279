"""In-place migration of older sqlite index files to the current layout, run on open.

File version 1 held the float vectors in a sqlite-vec ``vec0`` table. Version 2 keeps them
in a plain ``vectors`` table (rowid point lookups, which exact rescoring needs) and adds the
per-document 1-bit codes of ``ann_codes``. The vectors are copied, not recomputed, so the
index version is unchanged and nothing is re-embedded; it runs inside the transaction that
opens the file, so a crash leaves the version-1 file as it was. Reading every vector out of
``vec0`` is slow (about 3 ms per 1,000 vectors here), so a large index takes minutes once.
"""

from __future__ import annotations

import logging
import secrets

from headwater.sinks.sqlite._driver import Database

FILE_VERSION = "2"
MIGRATABLE = ("1",)
PAGE = 500  # documents per migration step

log = logging.getLogger(__name__)


def new_epoch() -> str:
    """A fresh identity for a file's code rows; a cache holding another one starts over."""
    return secrets.token_hex(8)


def migrate(db: Database, version: str, dimension: int, where: str) -> None:
    """Bring a file of ``version`` (one of ``MIGRATABLE``) to the current layout."""
    from headwater.sinks.sqlite._ann import write_codes  # numpy only when migrating

    log.info(
        "migrating the sqlite index %s from file version %s to %s", where, version, FILE_VERSION
    )
    db.execute("INSERT INTO vectors (id, embedding) SELECT rowid, embedding FROM vec")
    db.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [("ann_version", "0"), ("ann_epoch", new_epoch())],
    )
    after = ""
    while True:
        documents = [
            str(r[0])
            for r in db.execute(
                "SELECT DISTINCT document_id FROM chunks WHERE document_id > ? "
                "ORDER BY document_id LIMIT ?",
                [after, PAGE],
            )
        ]
        if not documents:
            break
        marks = ", ".join("?" * len(documents))
        rows = db.execute(
            "SELECT c.document_id, c.id, v.embedding FROM chunks c JOIN vectors v ON v.id = c.id "
            f"WHERE c.document_id IN ({marks}) ORDER BY c.document_id, c.id",
            documents,
        )
        grouped: dict[str, tuple[list[int], list[bytes]]] = {}
        for document_id, chunk, blob in rows:
            ids, blobs = grouped.setdefault(document_id, ([], []))
            ids.append(int(chunk))
            blobs.append(blob)
        for document_id, (ids, blobs) in grouped.items():
            write_codes(db, document_id, ids, b"".join(blobs), dimension)
        after = documents[-1]
    db.execute("DROP TABLE vec")
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [FILE_VERSION])
