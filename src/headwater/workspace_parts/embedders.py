"""Building the configured embedder, wrapped in the embedding cache.

``describe_embedder`` tells the model id, dimension and token limit without loading any
model (they enter the pipeline version, which even ``status`` needs). The real embedder
is built on first use and always sits behind the content-addressed cache in the state
dir, so a chunk text already embedded by the same model is never embedded again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from headwater.config import EmbedderSection
from headwater.errors import ConfigError
from headwater.pipeline.embed.base import Embedder


class LocalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # 32 keeps peak memory near 1 GB; 64 is ~12% less CPU per chunk but ~1.3-1.6 GB peak.
    batch_size: int = 32
    model_dir: str | None = None
    # Where prepared ONNX models are cached (default: $HEADWATER_CACHE_DIR or ~/.cache/headwater).
    cache_dir: str | None = None
    threads: int | None = None


class FakeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dimension: int = 64
    max_tokens: int = 256


class OpenAIOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base_url: str
    model: str
    dimension: int
    api_key: SecretStr | None = None
    batch_size: int = 64
    timeout: float = 30.0
    max_tokens: int = 256


def _options(section: EmbedderSection, model: type[BaseModel]) -> Any:
    try:
        return model.model_validate(section.options())
    except ValidationError as exc:
        problems = [
            f"embedder.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        ]
        raise ConfigError("invalid embedder configuration", problems) from exc


def _inner(section: EmbedderSection) -> Embedder:
    if section.type != "local" and "runtime" in section.model_fields_set:
        raise ConfigError(
            f"embedder.runtime = {section.runtime!r} applies to the local model only, but "
            f'embedder.type is {section.type!r}. Remove runtime or set type = "local".'
        )
    if section.type == "fake":
        from headwater.pipeline.embed.fake import FakeEmbedder

        fake = _options(section, FakeOptions)
        return FakeEmbedder(fake.dimension, max_tokens=fake.max_tokens)
    if section.type == "openai":
        from headwater.pipeline.embed.openai import OpenAIEmbedder

        remote = _options(section, OpenAIOptions)
        return OpenAIEmbedder(
            base_url=remote.base_url,
            model=remote.model,
            api_key=remote.api_key,
            dimension=remote.dimension,
            batch_size=remote.batch_size,
            timeout=remote.timeout,
        )
    local = _options(section, LocalOptions)
    if section.runtime == "torch":
        from headwater.pipeline.embed.local import LocalEmbedder

        return LocalEmbedder(
            model_dir=local.model_dir, batch_size=local.batch_size, threads=local.threads
        )
    from headwater.pipeline.embed.onnx import OnnxEmbedder

    return OnnxEmbedder(
        runtime=section.runtime,
        model_dir=local.model_dir,
        cache_dir=local.cache_dir,
        batch_size=local.batch_size,
        threads=local.threads,
    )


def describe_embedder(section: EmbedderSection) -> tuple[str, int, int]:
    """(model id, dimension, max tokens) of the configured embedder, loading no model."""
    inner = _inner(section)
    return inner.model_id, inner.dimension, inner.max_tokens


def build_embedder(section: EmbedderSection, state_dir: Path) -> Embedder:
    from headwater.pipeline.embed.cache import CachedEmbedder, EmbeddingCache

    return CachedEmbedder(_inner(section), EmbeddingCache(state_dir / "embeddings.db"))
