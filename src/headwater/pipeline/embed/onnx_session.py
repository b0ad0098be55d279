"""One ONNX Runtime session over a prepared model file: tokenize, batch, run, pool.

The hot path is the Rust tokenizer, one ONNX Runtime session and numpy: texts are
tokenized (truncated to the model's ``max_seq_length``), sorted by token count so each
batch pads little, run through the transformer, mean-pooled over real tokens and
L2-normalized exactly as the sentence-transformers pipeline of all-MiniLM-L6-v2
(Transformer, mean Pooling, Normalize) does, then put back in input order. Texts the
chunker already tokenized come as plain ids (``embed_ids``): the special tokens the
tokenizer's template adds around a text are added to them, and they are truncated as
the tokenizer truncates, so they run exactly as their texts would.

Loading a session optimizes the graph (fusing attention, layer norms, quantized matmuls),
which is most of its cost; the first load of a prepared model saves the optimized graph
next to it (``model.optimized.onnx``, hardware-independent "extended" level) and later
loads read that one, so a ``headwater search`` loads its session in ~0.1 s. It is only a
cache: unwritable, unreadable or refused by ONNX Runtime, the prepared model is used.

Both the embedder (``onnx``) and the quality gate that prepares the model
(``onnx_prepare``) run texts through this class; it imports neither.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from headwater.pipeline.embed.local import _read_json as read_model_json
from headwater.pipeline.embed.local import encode_batch

# The inputs of the exported graph, in order (``onnx_prepare`` exports with these names).
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
# Padded tokens per ONNX Runtime call (2 texts of 256 tokens), and calls run at once on
# one session, each with its share of the threads. Measured on this machine's 2 cores with
# int8 on 6,000 bench chunks (bench/onnx_batches.py): one call of <= 1,024 tokens at a time
# on both threads 115 chunks/s, peak 275 MB; two calls of <= 512 side by side 154 chunks/s,
# 252 MB (docs/performance.md). Batches of 32 texts peaked at ~1 GB.
BATCH_TOKENS = 512
PARALLEL_BATCHES = 2
OPTIMIZED_FILE = "model.optimized.onnx"

log = logging.getLogger(__name__)


class OnnxSession:
    """One ONNX Runtime session over a prepared model file, with the model's tokenizer.

    A call of several batches runs up to ``PARALLEL_BATCHES`` of them at once on the
    session (``run`` is thread-safe and releases the GIL), each with its share of the
    threads; a call of one batch (a search query) runs in the caller's thread alone.
    """

    def __init__(
        self,
        model_dir: Path,
        model_file: Path,
        *,
        batch_size: int = 32,
        threads: int | None = None,
        optimized_file: Path | None = None,
    ) -> None:
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer

        sbert = read_model_json(model_dir / "sentence_bert_config.json")
        self._np = np
        self._batch_size = batch_size
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=int(sbert.get("max_seq_length", 256)))
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._max_length = int(sbert.get("max_seq_length", 256))
        self._frame = _template(tokenizer)
        self._ort = ort
        threads = threads or os.cpu_count() or 1
        # Two small batches side by side on one session, half the threads each, keep both
        # cores busy where one batch's small matmuls leave intra-op threads waiting on each
        # other. One session shares weights and arena (a second cost ~90 MB, no faster).
        self._parallel = min(PARALLEL_BATCHES, threads)
        self._threads = max(1, threads // self._parallel)
        self._session = self._load(model_file, optimized_file)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def _options(self, level: Any) -> Any:
        options = self._ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = level
        options.log_severity_level = 3
        return options

    def _load(self, model_file: Path, optimized: Path | None) -> Any:
        """A session over ``optimized`` when it is there, else over ``model_file`` (saving
        its optimized graph to ``optimized`` when the directory is writable)."""
        ort = self._ort
        providers = ["CPUExecutionProvider"]
        every = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if optimized is not None and optimized.is_file():
            try:
                return ort.InferenceSession(
                    str(optimized), self._options(every), providers=providers
                )
            except Exception as exc:  # a damaged cache file: the prepared model still serves
                log.warning("ignoring the optimized model %s (%s)", optimized, exc)
        if optimized is not None and os.access(optimized.parent, os.W_OK):
            temp = optimized.with_name(f"{optimized.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
            options = self._options(ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
            options.optimized_model_filepath = str(temp)
            try:
                session = ort.InferenceSession(str(model_file), options, providers=providers)
                os.replace(temp, optimized)
                return session
            except Exception as exc:
                log.warning("could not save the optimized model %s (%s)", optimized, exc)
            finally:
                temp.unlink(missing_ok=True)
        return ort.InferenceSession(str(model_file), self._options(every), providers=providers)

    def embed(self, texts: Sequence[str]) -> Any:
        """A float32 array of unit vectors, one row per text, in input order."""
        return self.embed_ids(texts, [None] * len(texts))

    def embed_ids(self, texts: Sequence[str], ids: Sequence[Sequence[int] | None]) -> Any:
        """As ``embed``; ``ids[i]``, when given, are ``texts[i]``'s plain token ids (no
        special tokens, untruncated), used instead of tokenizing that text again."""
        np = self._np
        tokens = model_rows(self._tokenizer, self._frame, self._max_length, texts, ids)
        lengths = [len(row) for row in tokens]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        pending = list(_batches(order, lengths, self._batch_size))
        pending.reverse()  # popped from the end: shortest first, as sorted
        done: list[tuple[list[int], Any]] = []
        errors: list[BaseException] = []

        def drain() -> None:
            while not errors:
                try:
                    batch = pending.pop()  # atomic under the GIL
                except IndexError:
                    return
                try:
                    done.append((batch, self._run([tokens[i] for i in batch])))
                except BaseException as exc:  # re-raised in the caller's thread
                    errors.append(exc)

        helpers = [
            self._helpers().submit(drain) for _ in range(min(self._parallel, len(pending)) - 1)
        ]
        drain()
        for helper in helpers:
            helper.result()
        if errors:
            raise errors[0]
        if not done:
            return np.empty((0, 0), dtype=np.float32)
        result = np.empty((len(texts), done[0][1].shape[1]), dtype=np.float32)
        for batch, pooled in done:
            result[batch] = pooled
        return result

    def _helpers(self) -> ThreadPoolExecutor:
        """Long-lived threads for the second and later batches run side by side (not a
        thread per call: each new thread gets a malloc arena of its own)."""
        if self._pool is None:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(
                        max_workers=max(1, self._parallel - 1), thread_name_prefix="onnx"
                    )
        return self._pool

    def _run(self, rows: list[list[int]]) -> Any:
        """Mean-pooled, L2-normalized vectors of one batch of token id rows."""
        np = self._np
        width = max(len(tokens) for tokens in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for row, tokens in enumerate(rows):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = dict(zip(INPUT_NAMES, (ids, mask, np.zeros_like(ids)), strict=True))
        tokens_out = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (tokens_out * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)


def model_rows(
    tokenizer: Any,
    frame: tuple[list[int], list[int]] | None,
    max_length: int,
    texts: Sequence[str],
    ids: Sequence[Sequence[int] | None],
) -> list[list[int]]:
    """The model's input ids of each text: its plain ids in ``frame`` (the template's
    special tokens), cut to ``max_length`` as the tokenizer truncates, or, given no ids or
    no frame, what the tokenizer (truncating, special tokens added) makes of the text."""
    rows: list[list[int] | None] = [None] * len(texts)
    if frame is not None:
        start, end = frame
        most = max_length - len(start) - len(end)
        rows = [None if i is None else [*start, *i[:most], *end] for i in ids]
    missing = [n for n, row in enumerate(rows) if row is None]
    if missing:
        encodings = encode_batch(tokenizer, [texts[n] for n in missing], add_special_tokens=True)
        for n, encoding in zip(missing, encodings, strict=True):
            rows[n] = encoding.ids
    return rows  # type: ignore[return-value]  # every row is filled


def _template(tokenizer: Any) -> tuple[list[int], list[int]] | None:
    """The ids the tokenizer's template puts before and after a single text (BERT's
    ``[CLS]`` and ``[SEP]``), or None when a probe does not show them as a frame around
    the text's plain ids (then every text is tokenized here)."""
    probe = "headwater probe text"
    plain = tokenizer.encode(probe, add_special_tokens=False).ids
    full = tokenizer.encode(probe, add_special_tokens=True).ids
    for at in range(len(full) - len(plain) + 1):
        if full[at : at + len(plain)] == plain:
            return full[:at], full[at + len(plain) :]
    return None


def _batches(order: list[int], lengths: list[int], most: int) -> Iterator[list[int]]:
    """``order`` (ascending token length) cut into batches of at most ``most`` texts and
    at most ``BATCH_TOKENS`` padded tokens: long texts go a few at a time (attention's
    memory grows with batch × length², and small batches of long texts run faster on
    CPU), short ones many at a time (the call overhead is shared)."""
    batch: list[int] = []
    for index in order:
        if batch and (len(batch) >= most or (len(batch) + 1) * lengths[index] > BATCH_TOKENS):
            yield batch
            batch = []
        batch.append(index)
    if batch:
        yield batch
