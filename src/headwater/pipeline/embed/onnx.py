"""The bundled model run by ONNX Runtime: int8 by default, fp32 on request or fallback.

The embedder prepares the model on first use (``onnx_prepare``: export, quantize, quality
gate) and then runs texts through one session (``onnx_session``: the Rust tokenizer, ONNX
Runtime and numpy, mean-pooled and L2-normalized as sentence-transformers does). It gives
the chunker the token ids it counts and takes them back with the texts to embed
(``pipeline.embed.tokens``), so a chunk is tokenized once. Torch is
never imported here: it is needed only once, to prepare the model.

The runtime is part of ``model_id``, so a change of runtime is a change of the index
version (re-indexing) and of the embedding cache key. When the int8 model was refused by
the quality gate, the id says ``onnx``: what is actually used is what is recorded.

The first load of a prepared model saves its optimized graph next to it
(``model.optimized.onnx``), so later sessions load in ~0.1 s (see ``onnx_session``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from headwater.errors import ConfigError, FatalError
from headwater.pipeline.embed.each import EmbedOutcome
from headwater.pipeline.embed.local import LOCAL_MODEL_ID, TokenizerCounter, bundled_model_dir
from headwater.pipeline.embed.local import _read_json as read_model_json
from headwater.pipeline.embed.onnx_prepare import (
    MIN_COSINE,
    PreparedModel,
    Quantizer,
    default_cache_root,
    ensure_prepared,
    prepared_dir,
    read_prepared,
)
from headwater.pipeline.embed.onnx_session import OPTIMIZED_FILE, OnnxSession
from headwater.pipeline.embed.tokens import TokenIds

ONNX_RUNTIMES = ("onnx-int8", "onnx")
log = logging.getLogger(__name__)


def runtime_model_id(base: str, runtime: str) -> str:
    """``base`` for torch (ids of existing indexes stay valid), ``base+<runtime>`` else."""
    return base if runtime == "torch" else f"{base}+{runtime}"


class OnnxEmbedder:
    """The bundled model on ONNX Runtime (``onnx-int8`` or ``onnx``), prepared lazily.

    Constructing it reads two JSON files and, when the model was prepared before, its
    record (so ``model_id`` names the runtime actually used); the session loads on the
    first ``embed``, preparing the model first if the cache does not hold it.
    """

    def __init__(
        self,
        *,
        runtime: str = "onnx-int8",
        model_dir: Path | str | None = None,
        cache_dir: Path | str | None = None,
        batch_size: int = 32,
        threads: int | None = None,
        base_model_id: str = LOCAL_MODEL_ID,
        min_cosine: float = MIN_COSINE,
        quantizer: Quantizer | None = None,
    ) -> None:
        if runtime not in ONNX_RUNTIMES:
            raise ConfigError(
                f"ONNX runtime {runtime!r} is unknown; expected one of "
                f"{', '.join(ONNX_RUNTIMES)}. Fix [embedder] runtime."
            )
        self._dir = Path(model_dir) if model_dir is not None else bundled_model_dir()
        config = read_model_json(self._dir / "config.json")
        sbert = read_model_json(self._dir / "sentence_bert_config.json")
        self._requested = runtime
        self._cache_root = Path(cache_dir).expanduser() if cache_dir else default_cache_root()
        self._base_id = base_model_id
        self._dimension = int(config["hidden_size"])
        self._max_tokens = int(sbert.get("max_seq_length", 256)) - 2
        self._batch_size = batch_size
        self._threads = threads
        self._min_cosine = min_cosine
        self._quantizer = quantizer
        self._counter = TokenizerCounter(self._dir / "tokenizer.json")
        known = read_prepared(prepared_dir(self._dir, runtime, self._cache_root))
        self._runtime = known.runtime if known is not None else runtime
        self._session: OnnxSession | None = None
        self._lock = threading.Lock()
        self.embedded = 0

    @property
    def model_id(self) -> str:
        """The model's id, its runtime included."""
        return runtime_model_id(self._base_id, self._runtime)

    @property
    def runtime(self) -> str:
        """The runtime actually used (``onnx`` when the int8 model failed the gate)."""
        return self._runtime

    @property
    def dimension(self) -> int:
        """The length of every vector."""
        return self._dimension

    @property
    def max_tokens(self) -> int:
        """The token limit per text."""
        return self._max_tokens

    @property
    def loaded(self) -> bool:
        """Whether the ONNX session was loaded yet."""
        return self._session is not None

    def count_tokens(self, text: str) -> int:
        """Tokens the model would read for ``text``."""
        return self._counter.count_tokens(text)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """Tokens the model would read for each text."""
        return self._counter.count_tokens_batch(texts)

    def token_ids_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The plain token ids of each text (what ``count_tokens_batch`` counts), which
        ``embed_tokens`` takes instead of tokenizing the texts again."""
        return self._counter.ids_batch(texts)

    def prepare(self) -> PreparedModel:
        """Prepare the model now if the cache does not hold it (``headwater`` does this
        on the first embed); return what was prepared."""
        prepared = ensure_prepared(
            self._dir,
            self._requested,
            self._cache_root,
            min_cosine=self._min_cosine,
            quantizer=self._quantizer,
        )
        if prepared.runtime != self._runtime:
            self._runtime = prepared.runtime
            raise FatalError(
                f"{prepared.record.get('refused', 'the int8 model was refused')}. "
                f"This run was set up for runtime {self._requested!r}, so it embeds nothing; "
                "run the command again: it will use and record runtime 'onnx' "
                '(or set [embedder] runtime = "onnx" to say so).'
            )
        return prepared

    def _loaded(self) -> OnnxSession:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    prepared = self.prepare()
                    self._session = OnnxSession(
                        self._dir,
                        prepared.path,
                        batch_size=self._batch_size,
                        threads=self._threads,
                        optimized_file=prepared.path.with_name(OPTIMIZED_FILE),
                    )
        return self._session

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, computed with ONNX Runtime (loaded on first use)."""
        if not texts:
            return []
        vectors = self._loaded().embed(texts)
        self.embedded += len(texts)
        result: list[list[float]] = vectors.tolist()
        return result

    def embed_each(self, texts: Sequence[str]) -> list[EmbedOutcome]:
        """The model reads any text (it truncates), so no text fails alone."""
        return list(self.embed(texts))

    def embed_tokens(
        self, texts: Sequence[str], ids: Sequence[TokenIds | None]
    ) -> list[EmbedOutcome]:
        """As ``embed_each``, the texts whose plain ids are given not tokenized again."""
        if not texts:
            return []
        vectors = self._loaded().embed_ids(texts, ids)
        self.embedded += len(texts)
        result: list[EmbedOutcome] = vectors.tolist()
        return result
