"""The embedder registry: embedder types by name, like connectors and sinks.

An embedder type is a factory class with an ``Options`` model (validated from the
``[embedder]`` table) and ``build(options, runtime) -> Embedder``. Types are found in the
``headwater.embedders`` entry point group; the built-in ones (``fake``, ``local``,
``openai``) are also found by a fallback map, so they work before the package's entry
points are installed. Factories import their embedder lazily: loading the registry loads
no model and no torch.

``describe_embedder`` tells the model id, dimension and token limit without loading any
model (they enter the index version, which even ``status`` needs). ``cached_embedder``
puts the real embedder behind the content-addressed cache in the state dir, so a chunk
text already embedded by the same model is never embedded again.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from headwater.errors import ConfigError
from headwater.pipeline.embed.base import Embedder
from headwater.plugins import entry_points

ENTRY_POINT_GROUP = "headwater.embedders"
BUILTIN = {
    "fake": "headwater.pipeline.embed.registry:FakeFactory",
    "local": "headwater.pipeline.embed.registry:LocalFactory",
    "openai": "headwater.pipeline.embed.registry:OpenAIFactory",
}


@dataclass(frozen=True)
class EmbedderSpec:
    """The configured embedder as plain data: its type, the local runtime (and whether
    the config set it), and the type's own options."""

    type: str = "local"
    runtime: str = "onnx-int8"
    runtime_set: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)


class EmbedderFactory(Protocol):
    """Builds an embedder of one type from its validated options."""

    Options: ClassVar[type[BaseModel]]

    def build(self, options: Any, runtime: str) -> Embedder:
        """The embedder for ``options``, on ``runtime`` where the type has several."""


class LocalOptions(BaseModel):
    """The ``local`` embedder's options."""

    model_config = ConfigDict(extra="forbid")
    # 32 keeps peak memory near 1 GB; 64 is ~12% less CPU per chunk but ~1.3-1.6 GB peak.
    batch_size: int = 32
    model_dir: str | None = None
    # Where prepared ONNX models are cached (default: $HEADWATER_CACHE_DIR or ~/.cache/headwater).
    cache_dir: str | None = None
    threads: int | None = None


class FakeOptions(BaseModel):
    """The ``fake`` embedder's options (tests)."""

    model_config = ConfigDict(extra="forbid")
    dimension: int = 64
    max_tokens: int = 256


class OpenAIOptions(BaseModel):
    """The ``openai`` embedder's options (an OpenAI-compatible endpoint)."""

    model_config = ConfigDict(extra="forbid")
    base_url: str
    model: str
    dimension: int
    api_key: SecretStr | None = None
    batch_size: int = 64
    timeout: float = 30.0
    max_tokens: int = 256


class FakeFactory:
    """Builds the ``fake`` embedder."""

    Options: ClassVar[type[BaseModel]] = FakeOptions

    def build(self, options: FakeOptions, runtime: str) -> Embedder:
        """A FakeEmbedder with the configured dimension and token limit."""
        from headwater.pipeline.embed.fake import FakeEmbedder

        return FakeEmbedder(options.dimension, max_tokens=options.max_tokens)


class OpenAIFactory:
    """Builds the ``openai`` embedder."""

    Options: ClassVar[type[BaseModel]] = OpenAIOptions

    def build(self, options: OpenAIOptions, runtime: str) -> Embedder:
        """An OpenAIEmbedder for the configured endpoint and model."""
        from headwater.pipeline.embed.openai import OpenAIEmbedder

        return OpenAIEmbedder(
            base_url=options.base_url,
            model=options.model,
            api_key=options.api_key,
            dimension=options.dimension,
            batch_size=options.batch_size,
            timeout=options.timeout,
        )


class LocalFactory:
    """Builds the ``local`` embedder."""

    Options: ClassVar[type[BaseModel]] = LocalOptions

    def build(self, options: LocalOptions, runtime: str) -> Embedder:
        """The local model on ``runtime``: torch, or ONNX Runtime (``onnx``, ``onnx-int8``)."""
        if runtime == "torch":
            from headwater.pipeline.embed.local import LocalEmbedder

            return LocalEmbedder(
                model_dir=options.model_dir, batch_size=options.batch_size, threads=options.threads
            )
        from headwater.pipeline.embed.onnx import OnnxEmbedder

        return OnnxEmbedder(
            runtime=runtime,
            model_dir=options.model_dir,
            cache_dir=options.cache_dir,
            batch_size=options.batch_size,
            threads=options.threads,
        )


def available_embedder_types() -> list[str]:
    """The embedder types installed: built in or by entry point, sorted."""
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)} | set(BUILTIN))


def load_embedder_factory(type_name: str) -> EmbedderFactory:
    """The factory of embedder type ``type_name``: an entry point, else a built-in."""
    target: Any = None
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == type_name:
            target = ep.load()
            break
    if target is None and type_name in BUILTIN:
        module, _, attribute = BUILTIN[type_name].partition(":")
        target = getattr(importlib.import_module(module), attribute)
    if target is None:
        raise ConfigError(
            f"embedder type {type_name!r} is not installed; expected one of: "
            f"{', '.join(available_embedder_types())}. Fix `embedder.type`."
        )
    factory: EmbedderFactory = target()
    return factory


def make_embedder(spec: EmbedderSpec) -> Embedder:
    """The configured embedder, without the cache; builds no model until first use."""
    if spec.type != "local" and spec.runtime_set:
        raise ConfigError(
            f"embedder.runtime = {spec.runtime!r} applies to the local model only, but "
            f'embedder.type is {spec.type!r}. Remove runtime or set type = "local".'
        )
    factory = load_embedder_factory(spec.type)
    try:
        options = factory.Options.model_validate(dict(spec.options))
    except ValidationError as exc:
        problems = [
            f"embedder.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        ]
        raise ConfigError("invalid embedder configuration", problems) from exc
    return factory.build(options, spec.runtime)


def describe_embedder(spec: EmbedderSpec) -> tuple[str, int, int]:
    """(model id, dimension, max tokens) of the configured embedder, loading no model."""
    inner = make_embedder(spec)
    return inner.model_id, inner.dimension, inner.max_tokens


def cached_embedder(spec: EmbedderSpec, state_dir: Path) -> Embedder:
    """The configured embedder behind the embedding cache in ``state_dir``."""
    from headwater.pipeline.embed.cache import CACHE_FILE, CachedEmbedder, EmbeddingCache

    return CachedEmbedder(make_embedder(spec), EmbeddingCache(state_dir / CACHE_FILE))
