"""Conformance checks for index generations: separate storage, chunk texts, drop.

A sink instance serves one generation (``SinkContext.generation``); generation N's
storage is its own, so writing one never shows in another, and ``drop`` deletes it
(a generation opened again after a drop is empty). The read pointer, and so the atomic
switch, lives in the manifest (tested with the workspace, not here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from headwater.sinks._suite_base import SuiteBase, make_chunks, make_document
from headwater.sinks.base import Sink, WriteOutcome
from headwater.types import Access


class GenerationChecks(SuiteBase):
    """Conformance checks of index generations: separate storage, and dropping one."""

    @pytest.fixture
    def open_generation(self, sink: Sink) -> Callable[[int], Sink]:
        """Opens generation N of the same index next to ``sink`` (generation 1)."""
        opened: list[Sink] = []

        def open_one(generation: int) -> Sink:
            context = dataclasses.replace(sink.context, generation=generation)  # type: ignore[attr-defined]
            other: Sink = type(sink)(sink.options, context)  # type: ignore[attr-defined, call-arg]
            opened.append(other)
            return other

        return open_one

    def test_generations_keep_separate_storage(
        self, sink: Sink, open_generation: Callable[[int], Sink]
    ) -> None:
        """Two generations of one index hold and find only their own documents."""
        old = make_document("gen-old", Access(public=True))
        new = make_document("gen-new", Access(public=True))
        assert sink.replace(old, make_chunks(old, ["old river", "old lake"]), 1) is (
            WriteOutcome.APPLIED
        )
        second = open_generation(2)
        try:
            assert second.count(old.document_id) == 0
            assert second.replace(new, make_chunks(new, ["new river"]), 1) is WriteOutcome.APPLIED
            assert sink.count(new.document_id) == 0
            assert [r.document_id for r in second.inventory()] == [new.document_id]
            assert sink.chunk_texts(old.document_id) == ["old river", "old lake"]
            assert second.chunk_texts(new.document_id) == ["new river"]
            assert second.chunk_texts(old.document_id) == []
        finally:
            second.close()

    def test_drop_deletes_a_generation(
        self, sink: Sink, open_generation: Callable[[int], Sink]
    ) -> None:
        """Dropping a generation deletes its data and leaves the other generation whole."""
        kept = make_document("gen-kept", Access(public=True))
        gone = make_document("gen-gone", Access(public=True))
        sink.replace(kept, make_chunks(kept, ["kept river"]), 1)
        second = open_generation(2)
        second.replace(gone, make_chunks(gone, ["gone river"]), 1)
        second.drop()
        again = open_generation(2)
        try:
            assert list(again.inventory()) == []
            assert again.count(gone.document_id) == 0
            assert sink.count(kept.document_id) == 1  # other generations are untouched
        finally:
            again.close()
