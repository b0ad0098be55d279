"""The ONNX runtimes of the bundled model: preparation, quality gate, fallback, cache,
agreement with torch, the runtime in the index version, and a hot path without torch.

Preparing takes about a minute (export, quantize, gate), so each prepared cache is built
once per session under a temporary directory and shared by the tests that need it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from headwater.config import EmbedderSection
from headwater.errors import ConfigError, FatalError
from headwater.pipeline.embed import LOCAL_MODEL_ID, LocalEmbedder
from headwater.pipeline.embed.local import bundled_model_dir
from headwater.pipeline.embed.onnx import OnnxEmbedder
from headwater.pipeline.embed.onnx_prepare import MODEL_FILE, quality_sample, weights_sha256
from headwater.pipeline.embed.onnx_session import OPTIMIZED_FILE, OnnxSession
from headwater.pipeline.embed.registry import describe_embedder
from headwater.pipeline.version import chunking_version, content_version, index_version
from headwater.runtime import embedder_spec
from import_probe import HEAVY, cli_modules, loaded
from workspace_helpers import filesystem_source, write_config

# Not the gate sample: texts the gate never saw.
HELD_OUT = [
    "Where is the form for expense claims over 500 euros?",
    "The build fails on macOS because the linker cannot find libssl.",
    "Snow is forecast for the hills above 400 metres on Saturday night.",
    "Customers on the legacy plan keep their price until the end of the contract term.",
    "The parser reads PDF, DOCX and HTML files and keeps headings as section titles. " * 6,
    "def merge(a, b):\n    return sorted(set(a) | set(b))",
    "Le contrat est renouvelé automatiquement chaque année sauf résiliation écrite.",
    "All production database access requires a ticket and is logged for audit.",
]


def _cosines(a: list[list[float]], b: list[list[float]]) -> np.ndarray:
    return np.sum(np.asarray(a) * np.asarray(b), axis=1)


@pytest.fixture(scope="session")
def int8_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("onnx-int8-cache")
    OnnxEmbedder(cache_dir=cache).prepare()
    return cache


@pytest.fixture(scope="session")
def refused_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache whose int8 model was refused (threshold 1.01 cannot be met)."""
    cache = tmp_path_factory.mktemp("onnx-refused-cache")
    embedder = OnnxEmbedder(cache_dir=cache, min_cosine=1.01)
    with pytest.raises(FatalError) as refused:
        embedder.embed(["first text"])
    message = str(refused.value)
    assert "refused by the quality gate" in message and "expected >= 1.01" in message
    assert "run the command again" in message and embedder.runtime == "onnx"
    return cache


def _prepared_dir(cache: Path) -> Path:
    (directory,) = [p for p in (cache / "models").iterdir() if p.is_dir()]
    return directory


@pytest.mark.model
def test_gate_passes_and_int8_agrees_with_torch(int8_cache: Path) -> None:
    embedder = OnnxEmbedder(cache_dir=int8_cache)
    assert embedder.runtime == "onnx-int8"
    assert embedder.model_id == f"{LOCAL_MODEL_ID}+onnx-int8"
    onnx_vectors = embedder.embed(HELD_OUT)
    torch_vectors = LocalEmbedder(batch_size=8).embed(HELD_OUT)
    cosines = _cosines(onnx_vectors, torch_vectors)
    assert cosines.mean() >= 0.99 and cosines.min() >= 0.98, cosines
    norms = np.linalg.norm(np.asarray(onnx_vectors), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)
    # Length-sorted batching puts every vector back in input order. (Dynamic int8 scales
    # activations per batch, so a text alone differs slightly from the same text in a batch.)
    one_by_one = np.asarray([embedder.embed([text])[0] for text in reversed(HELD_OUT)][::-1])
    similarity = np.asarray(onnx_vectors) @ one_by_one.T
    assert list(similarity.argmax(axis=1)) == list(range(len(HELD_OUT)))
    assert similarity.diagonal().min() >= 0.98


@pytest.mark.model
def test_refused_int8_falls_back_to_fp32_and_says_so(
    refused_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The refusal itself (FatalError with the measured cosine) is asserted by the fixture.
    reopened = OnnxEmbedder(cache_dir=refused_cache, min_cosine=1.01)
    assert reopened.runtime == "onnx"
    assert reopened.model_id == f"{LOCAL_MODEL_ID}+onnx"
    with caplog.at_level(logging.WARNING):
        vectors = reopened.embed(HELD_OUT[:2])
    assert len(vectors) == 2 and not caplog.records  # prepared already: no second gate
    record = (_prepared_dir(refused_cache) / "prepared.json").read_text()
    assert '"runtime": "onnx"' in record and "refused" in record


@pytest.mark.model
def test_int8_agrees_with_fp32_onnx(int8_cache: Path, refused_cache: Path) -> None:
    texts = quality_sample()[:40] + HELD_OUT
    int8 = OnnxEmbedder(cache_dir=int8_cache).embed(texts)
    fp32 = OnnxEmbedder(cache_dir=refused_cache, min_cosine=1.01).embed(texts)
    assert _cosines(int8, fp32).min() >= 0.98


@pytest.mark.model
def test_embedding_with_a_prepared_model_never_imports_torch(int8_cache: Path) -> None:
    probe = (
        "import sys\n"
        "from headwater.pipeline.embed.onnx import OnnxEmbedder\n"
        "e = OnnxEmbedder()\n"
        "v = e.embed(['How do I reset my password?', 'flour and eggs'])\n"
        "assert len(v) == 2 and len(v[0]) == 384 and e.runtime == 'onnx-int8'\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "HEADWATER_CACHE_DIR": str(int8_cache)}
    subprocess.run([sys.executable, "-c", probe], check=True, env=env)


@pytest.mark.model
def test_cli_search_on_the_default_model_imports_nothing_heavy(
    int8_cache: Path, tmp_path: Path, corpus: Path
) -> None:
    """``headwater search`` end to end on the default embedder (local, onnx-int8): the
    query really runs through ONNX Runtime, and nothing of ``HEAVY`` is imported."""
    write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus),
        embedder='[embedder]\ntype = "local"\n',
    )
    env = {"HEADWATER_CACHE_DIR": str(int8_cache)}
    done, _ = cli_modules(["sync", "--json"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    query = ["search", "how many vacation days", "--as", "a@x", "--group", "staff", "--json"]
    done, modules = cli_modules(query, tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["title"] == "Vacation policy"
    assert "onnxruntime" in modules and "tokenizers" in modules
    assert loaded(modules, HEAVY) == []


@pytest.mark.model
def test_a_second_open_reuses_the_prepared_model(int8_cache: Path) -> None:
    model_file = _prepared_dir(int8_cache) / MODEL_FILE
    before = model_file.stat().st_mtime_ns
    again = OnnxEmbedder(cache_dir=int8_cache)
    again.prepare()
    assert again.embed(["cached"]) and model_file.stat().st_mtime_ns == before
    assert len([p for p in (int8_cache / "models").iterdir() if p.is_dir()]) == 1


@pytest.mark.model
def test_the_optimized_graph_is_cached_and_gives_the_same_vectors(
    int8_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = _prepared_dir(int8_cache)
    (directory / OPTIMIZED_FILE).unlink(missing_ok=True)
    plain = OnnxSession(bundled_model_dir(), directory / MODEL_FILE).embed(HELD_OUT)
    assert OnnxEmbedder(cache_dir=int8_cache).embed(HELD_OUT[:1])  # the first load saves it
    assert (directory / OPTIMIZED_FILE).stat().st_size > 1_000_000
    cached = OnnxEmbedder(cache_dir=int8_cache).embed(HELD_OUT)  # loaded from the cache
    assert np.allclose(cached, plain, atol=1e-6)
    (directory / OPTIMIZED_FILE).write_bytes(b"not a model")  # a damaged cache file
    with caplog.at_level(logging.WARNING):
        damaged = OnnxEmbedder(cache_dir=int8_cache).embed(HELD_OUT)
    assert np.allclose(damaged, plain, atol=1e-6)
    assert "ignoring the optimized model" in caplog.text


def test_the_weights_are_hashed_once_per_size_and_mtime(tmp_path: Path) -> None:
    """Opening a workspace must not hash the 90 MB weights: the digest is remembered by
    (path, size, mtime), and a change of either is hashed again."""
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"a" * 300_000)
    first = weights_sha256(weights, tmp_path / "cache")
    assert first == hashlib.sha256(b"a" * 300_000).hexdigest()
    stat = weights.stat()
    weights.write_bytes(b"b" * 300_000)  # same size; mtime put back: not read again
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert weights_sha256(weights, tmp_path / "cache") == first
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert weights_sha256(weights, tmp_path / "cache") == hashlib.sha256(b"b" * 300_000).hexdigest()


def test_the_runtime_is_part_of_the_model_id_and_the_index_version(tmp_path: Path) -> None:
    versions = {}
    for runtime in ("onnx-int8", "onnx", "torch"):
        section = EmbedderSection.model_validate(
            {"type": "local", "runtime": runtime, "cache_dir": str(tmp_path)}
        )
        model_id, dimension, max_tokens = describe_embedder(embedder_spec(section))
        assert (dimension, max_tokens) == (384, 254)
        embedder = {"type": "local", "model": model_id, "dimension": dimension}
        chunking = chunking_version(content_version({}), "c1", {}, embedder)
        versions[runtime] = (model_id, index_version(chunking, "sqlite", "1"))
    assert versions["torch"][0] == LOCAL_MODEL_ID  # indexes built with torch stay valid
    assert versions["onnx"][0] == f"{LOCAL_MODEL_ID}+onnx"
    assert len({v[1] for v in versions.values()}) == 3
    assert EmbedderSection().runtime == "onnx-int8"


def test_runtime_is_refused_for_a_remote_or_fake_embedder() -> None:
    section = EmbedderSection.model_validate({"type": "fake", "runtime": "onnx"})
    with pytest.raises(ConfigError, match="applies to the local model only"):
        describe_embedder(embedder_spec(section))


def test_onnx_batches_hold_at_most_batch_tokens_padded_tokens() -> None:
    # Long texts go a few at a time (memory and speed), short ones many at a time.
    from headwater.pipeline.embed.onnx_session import BATCH_TOKENS, _batches

    lengths = [256] * 9 + [16] * 100 + [300]  # one text longer than the budget alone
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches = list(_batches(order, lengths, 32))
    assert [i for b in batches for i in b] == order  # every text once, in sorted order
    for batch in batches:
        width = max(lengths[i] for i in batch)
        assert len(batch) <= 32
        assert len(batch) == 1 or len(batch) * width <= BATCH_TOKENS
    assert [len(b) for b in batches if lengths[b[0]] >= 256] == [2, 2, 2, 2, 1, 1]  # 256 + 300
    assert max(len(b) for b in batches) == 32  # short texts fill whole batches


@pytest.mark.model
def test_batches_run_side_by_side_give_the_vectors_of_one_at_a_time_in_input_order(
    int8_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import headwater.pipeline.embed.onnx_session as onnx_session

    model_file = _prepared_dir(int8_cache) / MODEL_FILE
    texts = [f"{i}: " + HELD_OUT[i % len(HELD_OUT)] * (1 + i % 5) for i in range(60)]
    monkeypatch.setattr(onnx_session, "PARALLEL_BATCHES", 1)
    expected = OnnxSession(bundled_model_dir(), model_file, threads=2).embed(texts)
    monkeypatch.setattr(onnx_session, "PARALLEL_BATCHES", 2)
    side_by_side = OnnxSession(bundled_model_dir(), model_file, threads=2)
    assert side_by_side.embed(texts[:1]).shape == (1, 384)
    assert side_by_side._pool is None  # one batch (a search query): the caller's thread
    assert np.allclose(side_by_side.embed(texts), expected, atol=1e-6)
    assert side_by_side._pool is not None

    calls = 0

    def fails_on_the_third_batch(rows: list[list[int]]) -> np.ndarray:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("the session failed on one batch")
        return np.zeros((len(rows), 384), dtype=np.float32)

    monkeypatch.setattr(side_by_side, "_run", fails_on_the_third_batch)
    with pytest.raises(RuntimeError, match="failed on one batch"):
        side_by_side.embed(texts)


@pytest.mark.model
def test_texts_with_their_token_ids_embed_as_the_texts_and_are_not_tokenized_again(
    int8_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = OnnxEmbedder(cache_dir=int8_cache)
    texts = [f"{i}: " + HELD_OUT[i % len(HELD_OUT)] * (1 + i % 7) for i in range(40)]
    ids = embedder.token_ids_batch(texts)  # what the chunker counted
    assert max(len(i) for i in ids) > 256  # the longest are truncated
    expected = np.asarray(embedder.embed(texts))
    session = embedder._loaded()
    tokenizer, tokenized = session._tokenizer, []

    class Spy:
        def encode_batch(self, batch: list[str], **options: bool) -> list[object]:
            tokenized.append(len(batch))
            return list(tokenizer.encode_batch(batch, **options))

    monkeypatch.setattr(session, "_tokenizer", Spy())
    assert np.allclose(embedder.embed_tokens(texts, ids), expected, atol=1e-6)
    assert tokenized == []
    some = [None if n % 2 else i for n, i in enumerate(ids)]
    assert np.allclose(embedder.embed_tokens(texts, some), expected, atol=1e-6)
    assert tokenized == [len(texts) // 2]
