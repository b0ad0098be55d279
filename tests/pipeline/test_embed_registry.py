"""The embedder registry: types by name from entry points, with a built-in fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.errors import ConfigError
from headwater.pipeline.embed import registry
from headwater.pipeline.embed.cache import CachedEmbedder
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.pipeline.embed.registry import (
    EmbedderSpec,
    cached_embedder,
    describe_embedder,
    load_embedder_factory,
    make_embedder,
)


def test_builtin_types_work_without_installed_entry_points(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    for name in ("fake", "local", "openai"):
        assert load_embedder_factory(name).Options is not None
    fake = make_embedder(EmbedderSpec(type="fake", options={"dimension": 8}))
    assert isinstance(fake, FakeEmbedder) and fake.dimension == 8


def test_describe_builds_no_model_and_the_cache_wraps_the_embedder(tmp_path: Path) -> None:
    spec = EmbedderSpec(type="fake", options={"dimension": 12, "max_tokens": 99})
    assert describe_embedder(spec)[1:] == (12, 99)
    assert isinstance(cached_embedder(spec, tmp_path), CachedEmbedder)


def test_unknown_type_and_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="embedder type 'nope' is not installed"):
        make_embedder(EmbedderSpec(type="nope"))
    with pytest.raises(ConfigError, match=r"embedder\.colour") as caught:
        make_embedder(EmbedderSpec(type="fake", options={"colour": "blue"}))
    assert any("embedder.colour" in p for p in caught.value.problems)
    with pytest.raises(ConfigError, match="applies to the local model only"):
        make_embedder(EmbedderSpec(type="fake", runtime="onnx", runtime_set=True))
