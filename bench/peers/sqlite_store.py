"""A minimal SQLite-backed LangChain VectorStore for the peer benchmark.

The idea: LangChain's indexing API needs a vector store that persists between processes
(each benchmark phase is its own process) and implements ``delete`` and ``add_documents``
with ids. The shipped embedded options either keep everything in memory (InMemoryVectorStore,
whose JSON dump/load would dominate a no-op run) or lack ``delete`` (SQLiteVec), so this
store keeps one row per chunk (id, text, metadata JSON, float32 vector blob) in a SQLite
file, written in one transaction per ``add_documents`` call, and searches by brute force
with numpy. It is what Headwater's ``sqlite`` sink does at its simplest, so the comparison
measures the indexing logic, not two different storage engines.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore


class SqliteVectorStore(VectorStore):
    def __init__(self, path: Path | str, embedding: Embeddings) -> None:
        self._embedding = embedding
        self._db = sqlite3.connect(str(path))
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS chunks ("
            " id TEXT PRIMARY KEY, text TEXT NOT NULL, metadata TEXT NOT NULL,"
            " vector BLOB NOT NULL)"
        )
        self._db.commit()

    @property
    def embeddings(self) -> Embeddings:
        return self._embedding

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        text_list = list(texts)
        if ids is None:
            raise ValueError("SqliteVectorStore.add_texts needs ids (the indexing API gives them)")
        metas = metadatas or [{} for _ in text_list]
        vectors = self._embedding.embed_documents(text_list)
        rows = [
            (i, t, json.dumps(m), np.asarray(v, dtype=np.float32).tobytes())
            for i, t, m, v in zip(ids, text_list, metas, vectors, strict=True)
        ]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO chunks VALUES (?, ?, ?, ?)", rows)
        return list(ids)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        if not ids:
            return True
        with self._db:
            self._db.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in ids])
        return True

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        query_vector = np.asarray(self._embedding.embed_query(query), dtype=np.float32)
        rows = self._db.execute("SELECT id, text, metadata, vector FROM chunks").fetchall()
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32)
        scores = matrix.reshape(len(rows), -1) @ query_vector
        best = np.argsort(-scores)[:k]
        return [
            Document(id=rows[i][0], page_content=rows[i][1], metadata=json.loads(rows[i][2]))
            for i in best
        ]

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> SqliteVectorStore:
        store = cls(kwargs.pop("path", ":memory:"), embedding)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        marks = ",".join("?" for _ in ids)
        rows = self._db.execute(
            f"SELECT id, text, metadata FROM chunks WHERE id IN ({marks})", list(ids)
        ).fetchall()
        return [Document(id=r[0], page_content=r[1], metadata=json.loads(r[2])) for r in rows]
