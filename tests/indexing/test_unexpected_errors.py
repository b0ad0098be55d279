"""An error nobody planned for, on one document, fails that document only (invariant 10).

A tokenizer or a model may raise anything on an input it chokes on (a ``ValueError``, a
``RuntimeError`` from native code), not only the ``ItemError`` the embedder contract
names. Such an error used to end the whole drain: no other document of the workspace
was indexed, sync after sync. Now the document it came from is a failure record (stage
``chunk`` or ``embed``, the exception's class as error class) and the rest is indexed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.pipeline.embed.each import EmbedOutcome
from headwater.pipeline.embed.fake import FakeEmbedder
from workspace_helpers import filesystem_source, write_config


class Choking(FakeEmbedder):
    """Counts tokens of any text but one holding COUNTBOMB; embeds any but EMBEDBOMB."""

    def count_tokens(self, text: str) -> int:
        if "COUNTBOMB" in text:
            raise ValueError("the tokenizer choked")
        return super().count_tokens(text)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count_tokens(t) for t in texts]

    def embed_each(self, texts: Sequence[str]) -> list[EmbedOutcome]:
        if any("EMBEDBOMB" in t for t in texts):
            raise RuntimeError("the model crashed on this input")
        return super().embed_each(texts)


@pytest.mark.parametrize("bomb", ["COUNTBOMB", "EMBEDBOMB"])
def test_an_unexpected_error_fails_its_document_and_the_rest_is_indexed(
    tmp_path: Path, bomb: str
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(6):
        (corpus / f"doc{n}.txt").write_text(f"ordinary handbook page number {n}\n")
    (corpus / "poison.txt").write_text(f"a page the pipeline chokes on {bomb}\n")
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(corpus, access="{ public = true }")
    )
    stage = "chunk" if bomb == "COUNTBOMB" else "embed"
    error_class = "ValueError" if bomb == "COUNTBOMB" else "RuntimeError"
    for _attempt in range(2):  # the next sync indexes nothing more and still does not crash
        with Workspace.open(config, embedder=Choking(32)) as ws:
            result = ws.sync()
            hits = ws.search("ordinary handbook page", user="a@x.com", k=20, mode="keyword")
            assert sorted(h["title"] for h in hits) == [f"doc{n}.txt" for n in range(6)]
            [failure] = ws.failures()
            assert (failure.object_id, failure.stage) == ("poison.txt", stage)
            assert failure.error_class == error_class
            assert ws.status()["indexes"]["main"]["pending"] == 1
    assert result.index.failed in (0, 1)  # the second sync may find it already blocked
