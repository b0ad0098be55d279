"""``[embedder] cache_max_bytes``: the embedding cache evicts least recently used entries.

Entries carry ``last_used`` (stored, refreshed by a hit at most hourly); ``trim`` evicts
in that order until the keys and vectors fit the cap. Stamps are set by hand here so the
order is decided by data, not by the clock.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.config import load_config
from headwater.errors import ConfigError
from headwater.pipeline.embed import EmbeddingCache, cache_key
from headwater.scheduler.housekeeping import housekeep
from workspace_helpers import filesystem_source, write_config

DIM = 8
ENTRY = 32 + 4 * DIM  # a key and a float32 vector


def filled(tmp_path: Path, names: str) -> tuple[EmbeddingCache, dict[str, bytes]]:
    cache = EmbeddingCache(tmp_path / "embeddings.db")
    keys = {n: cache_key("m", n) for n in names}
    cache.put_many((keys[n], [float(i)] * DIM) for i, n in enumerate(names))
    return cache, keys


def stamp(cache: EmbeddingCache, key: bytes, value: int) -> None:
    with sqlite3.connect(cache.path) as db:
        db.execute("UPDATE embeddings SET last_used = ? WHERE key = ?", (value, key))


def last_used(cache: EmbeddingCache, key: bytes) -> int:
    with sqlite3.connect(cache.path) as db:
        (value,) = db.execute("SELECT last_used FROM embeddings WHERE key = ?", (key,)).fetchone()
    return int(value)


def test_trim_evicts_the_least_recently_used_until_under_the_cap(tmp_path: Path) -> None:
    cache, keys = filled(tmp_path, "abcd")
    for name, used in zip("abcd", (100, 300, 200, 400), strict=True):
        stamp(cache, keys[name], used)
    assert cache.stored_bytes() == 4 * ENTRY
    assert cache.trim(None).evicted == 0  # no cap: nothing goes
    trim = cache.trim(2 * ENTRY + 10)
    assert (trim.evicted, trim.evicted_bytes, trim.entries, trim.bytes) == (
        2,
        2 * ENTRY,
        2,
        2 * ENTRY,
    )
    assert set(cache.get_many(list(keys.values()))) == {keys["b"], keys["d"]}
    assert cache.trim(2 * ENTRY).evicted == 0  # at the cap is under it
    assert cache.trim(0).entries == 0
    cache.close()


def test_a_hit_refreshes_last_used_so_it_is_kept(tmp_path: Path) -> None:
    cache, keys = filled(tmp_path, "abcd")
    for key in keys.values():
        stamp(cache, key, 0)  # all equally old: eviction would go in insert order
    assert cache.get_many([keys["a"]])  # a hit on the oldest insert
    assert last_used(cache, keys["a"]) >= int(time.time()) - 5
    cache.trim(3 * ENTRY)
    assert set(cache.get_many(list(keys.values()))) == {keys["a"], keys["c"], keys["d"]}

    recent = int(time.time()) - 10  # a stamp younger than an hour is not rewritten
    stamp(cache, keys["c"], recent)
    cache.get_many([keys["c"]])
    assert last_used(cache, keys["c"]) == recent
    cache.close()


def test_a_cache_written_before_last_used_existed_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE embeddings (key BLOB PRIMARY KEY, dimension INTEGER NOT NULL,"
            " vector BLOB NOT NULL)"
        )
        db.execute("INSERT INTO embeddings VALUES (?, ?, ?)", (b"k" * 32, DIM, b"\0" * 4 * DIM))
    with EmbeddingCache(path) as cache:
        assert cache.get_many([b"k" * 32])  # readable, and its hit stamps it
        assert cache.trim(0).evicted == 1


def test_the_cap_is_a_size_in_the_config(tmp_path: Path) -> None:
    def embedder(line: str) -> Path:
        (tmp_path / "headwater.toml").write_text(
            f'[workspace]\ntenant = "t"\n[embedder]\ntype = "fake"\n{line}\n'
        )
        return tmp_path / "headwater.toml"

    assert load_config(embedder("")).config.embedder.cache_max_bytes is None
    assert load_config(embedder('cache_max_bytes = "2MB"')).config.embedder.cache_max_bytes == (
        2_000_000
    )
    cap = load_config(embedder('cache_max_bytes = "1GiB"')).config.embedder.cache_max_bytes
    assert cap == 1024**3
    assert load_config(embedder("cache_max_bytes = 4096")).config.embedder.cache_max_bytes == 4096
    with pytest.raises(ConfigError) as bad:
        load_config(embedder('cache_max_bytes = "lots"'))
    assert "cache_max_bytes" in str(bad.value) + str(getattr(bad.value, "problems", ""))


def test_housekeeping_trims_the_workspace_cache_to_the_cap(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    for i in range(12):
        (root / f"doc{i}.txt").write_text(f"document {i} about topic {i % 5}\n")
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(root))
    with Workspace.open(config) as ws:
        ws.sync()
        with EmbeddingCache(ws.state_dir / "embeddings.db") as cache:
            full = cache.stored_bytes()
            entries = len(cache)
    assert entries >= 12
    text = config.read_text().replace(
        '[embedder]\ntype = "fake"\n', f'[embedder]\ntype = "fake"\ncache_max_bytes = {full // 2}\n'
    )
    config.write_text(text)
    with Workspace.open(config) as ws:
        report = housekeep(ws.runtime)
    assert report.cache is not None
    assert report.cache.evicted > 0 and report.cache.bytes <= full // 2
    assert report.as_dict()["embedding_cache"]["max_bytes"] == full // 2
    assert "embedding cache:" in report.summary() and "evicted" in report.summary()
    # The cap is not an embedder setting: the index needs no rebuild for it.
    with Workspace.open(config) as ws:
        assert not [w for w in ws.warnings() if "rebuild" in w]
