"""Search results stop padding ``k`` with hits whose score carries no signal, take a
``min_score``, and show snippets without Markdown escapes (issue 28, item 9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from headwater import Workspace
from headwater.api.v1 import SearchRequest
from headwater.errors import ConfigError
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.search.results import snippet, unescape_markdown
from workspace_helpers import filesystem_source, write_config

CLI = [sys.executable, "-m", "headwater.cli"]
FLAGS = ("--mode", "keyword", "--min-score", "1000000", "--json")
TOPICS = ("gardening", "sailing", "chess", "baking", "cycling", "painting", "pottery")
PAGE = (
    "<html><head><title>Allocator tuning</title></head><body><article><h1>Allocator"
    "</h1><p>Set malloc_free_fill to 1 to catch use after free; the *default* is 0 and"
    " [x] means on. Keep `C:\\_tmp` as is.</p><p>"
    + "The allocator fills freed memory with a pattern when asked to. " * 12
    + "</p></article></body></html>"
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for topic in TOPICS:
        (docs / f"{topic}.md").write_text(
            f"# {topic}\n\nNotes on {topic}, a weekend hobby of the team.\n", encoding="utf-8"
        )
    (docs / "kubernetes.md").write_text(
        "# Cluster\n\nOur kubernetes cluster runs the kubernetes scheduler.\n", encoding="utf-8"
    )
    (docs / "allocator.html").write_text(PAGE, encoding="utf-8")
    path = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(docs, access="{ public = true }")
    )
    with Workspace.open(path, embedder=FakeEmbedder(32)) as ws:
        ws.sync()
    return path


def test_hybrid_leaves_out_the_floor_hits_that_only_filled_k(config: Path) -> None:
    """Every hobby note came back for "kubernetes": the vector list always has k
    neighbours, and its lowest, which keyword search did not return, scored 0.0."""
    with Workspace.open(config, embedder=FakeEmbedder(32)) as ws:
        found = ws.search("kubernetes", k=20, mode="hybrid")
        vector = ws.search("kubernetes", k=20, mode="vector")
    assert found[0].locator.endswith("kubernetes.md")
    assert all(r.score > 0.0 for r in found), [(r.locator, r.score) for r in found]
    assert len(found) < len(vector) == len(TOPICS) + 2  # the floor went, nothing else


def test_min_score_leaves_out_lower_results_in_every_mode(config: Path) -> None:
    with Workspace.open(config, embedder=FakeEmbedder(32)) as ws:
        for mode in ("hybrid", "vector", "keyword"):
            every = ws.search("kubernetes cluster", k=20, mode=mode)
            cut = every[len(every) // 2].score
            kept = ws.search("kubernetes cluster", k=20, mode=mode, min_score=cut)
            assert kept and all(r.score >= cut for r in kept)
            assert [r.document_id for r in kept] == [r.document_id for r in every if r.score >= cut]
            assert ws.search("kubernetes", k=20, mode=mode, min_score=1e9) == []
        with pytest.raises(ConfigError, match="min-score"):
            ws.search("kubernetes", min_score=float("nan"))
    with pytest.raises(ValidationError):
        SearchRequest(query="kubernetes", min_score=float("inf"))
    assert SearchRequest(query="kubernetes", min_score=0.5).min_score == 0.5


def test_the_cli_takes_min_score(config: Path) -> None:
    done = subprocess.run(
        [*CLI, "-c", str(config), "search", "kubernetes", *FLAGS],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    # The config's embedder is the fake one, so the CLI needs no model here.
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"] == []


def test_html_snippets_show_no_markdown_escapes(config: Path) -> None:
    with Workspace.open(config, embedder=FakeEmbedder(32)) as ws:
        (hit,) = ws.search("malloc_free_fill", k=1, mode="keyword")
    assert "malloc\\_free\\_fill" in hit.chunk  # the indexed text is left as it is
    assert "malloc_free_fill" in hit.snippet and "\\_" not in hit.snippet.replace("`C:\\_tmp`", "")
    assert "the *default* is 0 and [x] means on" in hit.snippet


def test_unescaping_keeps_code_spans_and_lone_backslashes() -> None:
    assert (
        unescape_markdown(r"a\_b \* c \[d\] `e\_f` C:\dir \\")
        == r"a_b * c [d] `e\_f` C:\dir \ "[:-1]
    )
    assert snippet(r"Set malloc\_free\_fill", "malloc") == "Set malloc_free_fill"
