"""Shared fixtures of the pipeline tests: the bundled tokenizer (no torch) ."""

from __future__ import annotations

import os

import pytest

from headwater.pipeline.embed.local import TokenizerCounter, bundled_model_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def tokenizer() -> TokenizerCounter:
    return TokenizerCounter(bundled_model_dir() / "tokenizer.json")
