"""Preparing a batch for the sinks: read each document's text, chunk it, embed the chunks.

One document's failure (a chunker or embedder error on its text, its content gone) is a
failure record for that document only; the rest of the batch is prepared. An embedding
batch that raises is embedded again document by document to find whose text it was; a
transient embedder failure fails every document of the batch, for the next drain to retry.
Content gone because a newer revision superseded the document is no failure. A document
whose chunking fails is, when its source wants metadata-only documents, indexed by its
metadata in place of its text (``pipeline.unavailable``): still findable by its name,
its failure record open (``stood_in``).

The texts of a batch are sorted by length, as sentence-transformers sorts them, so each
of the model's calls pads little (their vectors go back in the texts' order), and carry
the token ids the chunker counted (``pipeline.embed.tokens``) when the embedder takes
them, so no chunk is tokenized twice. They are embedded in slices of ``EMBED_SLICE``:
after each slice the progress callback hears how many chunks are embedded (a batch of
long documents took minutes with its progress at zero), and before each one
``should_stop`` is asked, so a stop request (SIGTERM, Ctrl-C) abandons the batch within
one slice: ``Cancelled`` is raised, nothing of the batch is written, and its documents
stay pending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from headwater.errors import (
    Cancelled,
    ContentMissing,
    HeadwaterError,
    ItemError,
    TransientError,
)
from headwater.indexer.report import IndexReport
from headwater.manifest.content import ContentStore
from headwater.manifest.records import DocumentRecord
from headwater.pipeline.chunk import ChunkerSettings, chunk_document
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.embed.tokens import TokenEmbedder, embed_tokens
from headwater.pipeline.hooks import Drop, HookChain, HookDocument, split_sections
from headwater.pipeline.unavailable import unavailable
from headwater.retry import RetryPolicy, call_with_retry
from headwater.types import Chunk, EmbeddedChunk, MetadataValue

log = logging.getLogger(__name__)

Fail = Callable[[DocumentRecord, str, BaseException, IndexReport], None]
EMBED_SLICE = 64  # texts per embedding call: a stop waits for one, progress moves per one


@dataclass
class Prepared:
    """One document ready for the sinks: its chunks with their vectors, and the title and
    metadata its hooks gave it (None: the manifest's). No chunks: a hook dropped it."""

    chunks: list[EmbeddedChunk] = field(default_factory=list)
    title: str | None = None
    metadata: Mapping[str, MetadataValue] | None = None


class Preparer:
    """Reads, chunks and embeds the documents of one batch for the indexer."""

    def __init__(
        self,
        content_store: ContentStore,
        embedder: Callable[[], Embedder],
        pipeline_version: str,
        chunker: ChunkerSettings,
        retry: RetryPolicy,
        *,
        fail: Fail,
        superseded: Callable[[DocumentRecord], bool],
        should_stop: Callable[[], bool] = lambda: False,
        embedded: Callable[[int], None] | None = None,
        hooks: Callable[[str], HookChain] | None = None,
        stand_in: Callable[[str], bool] = lambda _source: True,
    ) -> None:
        self.hooks = hooks or (lambda _source: HookChain())
        self._stand_in = stand_in  # whether a source's unchunkable documents stand in
        self.excluded: set[str] = set()  # documents a hook dropped
        self.stood_in: set[str] = set()  # indexed by their metadata: chunking failed
        self.content_store = content_store
        self._embedder = embedder
        self.pipeline_version = pipeline_version
        self.chunker = chunker
        self.retry = retry
        self._fail = fail
        self._superseded = superseded
        self._should_stop = should_stop
        self._embedded = embedded  # told the chunks embedded so far in this batch
        self._ids: dict[str, list[int]] | None = None  # the chunker's ids by embed text

    @property
    def embedder(self) -> Embedder:
        """The indexer's embedder (built on first use)."""
        return self._embedder()

    def prepare(
        self, docs: list[DocumentRecord], need_vectors: bool, report: IndexReport
    ) -> tuple[dict[str, Prepared], set[str]]:
        """The chunks and vectors of each document that could be prepared, and the ids of
        those that could not (each a failure record, unless its content was superseded)."""
        prepared: dict[str, Prepared] = {}
        failed: set[str] = set()
        takes_ids = need_vectors and isinstance(self.embedder, TokenEmbedder)
        self._ids = {} if takes_ids else None
        chunked, framing = self._chunk_each(docs, report, prepared, failed)
        texts = [c.embed_text for chunks in chunked.values() for c in chunks]
        vectors: list[list[float] | ItemError | None] = [None] * len(texts)
        if need_vectors and texts:
            try:
                vectors = list(self._embed_in_slices(texts))
            except TransientError as exc:
                for doc in docs:
                    if doc.document_id in chunked:
                        self._fail(doc, "embed", exc, report)
                        failed.add(doc.document_id)
                return prepared, failed
            except HeadwaterError:
                raise
            except Exception:  # the model choked on some text: find whose, embed the rest
                log.debug("embedding a batch failed; embedding document by document", exc_info=True)
                vectors = self._embed_by_document(docs, chunked, report, failed)
        position = 0
        for doc in docs:
            chunks = chunked.get(doc.document_id)
            if chunks is None:
                continue
            mine = vectors[position : position + len(chunks)]
            position += len(chunks)
            error = next((v for v in mine if isinstance(v, ItemError)), None)
            if error is not None:
                self._fail(doc, "embed", error, report)
                failed.add(doc.document_id)
                continue
            framed = self.hooks(doc.source_id) or doc.document_id in self.stood_in
            hooked = framing[doc.document_id] if framed else None
            prepared[doc.document_id] = Prepared(
                [EmbeddedChunk(chunk=c, vector=v) for c, v in zip(chunks, mine, strict=True)],  # type: ignore[arg-type]
                title=hooked.title if hooked else None,
                metadata=hooked.metadata if hooked else None,
            )
            report.chunks += len(chunks)
        return prepared, failed

    def _chunk_each(
        self,
        docs: list[DocumentRecord],
        report: IndexReport,
        prepared: dict[str, Prepared],
        failed: set[str],
    ) -> tuple[dict[str, list[Chunk]], dict[str, HookDocument]]:
        """Each document's chunks and the hooks' framing of it (title, metadata), by id.
        A document a hook dropped goes to ``prepared`` with no chunks; one whose text could
        not be read, hooked or chunked to ``failed`` (a failure record, unless superseded
        or, for a chunking failure, stood in for by its metadata-only document)."""
        chunked: dict[str, list[Chunk]] = {}
        framing: dict[str, HookDocument] = {}
        for doc in docs:
            try:
                assert doc.checksum is not None
                try:
                    text = self.content_store.get(doc.checksum)
                except ContentMissing:
                    if not self._superseded(doc):
                        raise
                    failed.add(doc.document_id)  # no failure: its new revision is pending
                    continue
                hooked = self._hooked(doc, text, report)
                if hooked is None:  # dropped: it leaves every index (no chunks)
                    prepared[doc.document_id] = Prepared()
                    continue
                framing[doc.document_id] = hooked
                chunked[doc.document_id] = self._chunk(doc, hooked)
            except ItemError as exc:
                hook_failed = exc.error_class == "hook_error"
                self._fail(doc, "hook" if hook_failed else "chunk", exc, report)
                if hook_failed or not self._stood_in(doc, exc, chunked, framing):
                    failed.add(doc.document_id)
            except HeadwaterError:  # fatal or a config error: not this document's
                raise
            except Exception as exc:  # a tokenizer choking on this text
                log.debug("chunking %s failed", doc.document_id, exc_info=True)
                self._fail(doc, "chunk", exc, report)
                if not self._stood_in(doc, exc, chunked, framing):
                    failed.add(doc.document_id)
        return chunked, framing

    def _chunk(self, doc: DocumentRecord, hooked: HookDocument) -> list[Chunk]:
        return chunk_document(
            document_id=doc.document_id,
            pipeline_version=self.pipeline_version,
            text=hooked.text,
            title=hooked.title,
            metadata=hooked.metadata,
            counter=self.embedder,
            settings=self.chunker,
            token_ids=self._ids,
        )

    def _stood_in(
        self,
        doc: DocumentRecord,
        exc: BaseException,
        chunked: dict[str, list[Chunk]],
        framing: dict[str, HookDocument],
    ) -> bool:
        """Chunk the metadata-only document of ``doc``, whose chunking failed with
        ``exc``, in its place when its source wants one; whether it did."""
        if not self._stand_in(doc.source_id):
            return False
        reason = f"{getattr(exc, 'error_class', type(exc).__name__)}: {exc}"
        found = unavailable(
            str(doc.metadata.get("path") or doc.object_id),
            title=doc.title,
            media_type=doc.media_type,
            reason=reason,
            metadata=doc.metadata,
        )
        document = HookDocument(
            document_id=doc.document_id,
            source=doc.source_id,
            object_id=doc.object_id,
            title=found.title,
            sections=(found.text,),
            metadata=found.metadata,
        )
        try:
            hooks = self.hooks(doc.source_id)
            if hooks:  # a redaction applies to its title and metadata too
                outcome = hooks.run(document)
                if isinstance(outcome, Drop):
                    return False
                document = outcome
            chunked[doc.document_id] = self._chunk(doc, document)
        except Exception:  # its metadata cannot be chunked either: a failure only
            log.debug("chunking %s's metadata failed", doc.document_id, exc_info=True)
            return False
        framing[doc.document_id] = document
        self.stood_in.add(doc.document_id)
        return True

    def _embed_in_slices(self, texts: list[str]) -> list[list[float] | ItemError]:
        """``texts`` embedded ``EMBED_SLICE`` at a time, shortest first (in tokens when
        the chunker gave their ids, else in characters), their vectors in ``texts``'s
        order; ``Cancelled`` between slices once a stop was asked for."""
        ids = self._ids_of(texts)
        sizes = [len(t) for t in texts]
        if ids is not None:
            sizes = [len(t) if i is None else len(i) for t, i in zip(texts, ids, strict=True)]
        order = sorted(range(len(texts)), key=sizes.__getitem__)
        vectors: list[list[float] | ItemError | None] = [None] * len(texts)
        for at in range(0, len(order), EMBED_SLICE):
            if self._should_stop():
                raise Cancelled(
                    f"stopped while embedding a batch ({at} of {len(texts)} chunks embedded); "
                    "nothing of it was written, and its documents stay pending for the "
                    "next drain"
                )
            part = order[at : at + EMBED_SLICE]
            outcomes = self._embed(
                [texts[n] for n in part], None if ids is None else [ids[n] for n in part]
            )
            for n, outcome in zip(part, outcomes, strict=True):
                vectors[n] = outcome
            if self._embedded is not None:
                self._embedded(at + len(part))
        return vectors  # type: ignore[return-value]  # every position is filled

    def _ids_of(self, texts: list[str]) -> list[list[int] | None] | None:
        """The chunker's token ids of each text, when the embedder takes them."""
        known = self._ids
        return None if known is None else [known.get(t) for t in texts]

    def _hooked(self, doc: DocumentRecord, text: str, report: IndexReport) -> HookDocument | None:
        """The document after the hooks (itself without any); None when one dropped it,
        which is recorded as a permanent ``excluded`` failure at stage ``hook``."""
        hooks = self.hooks(doc.source_id)
        document = HookDocument(
            document_id=doc.document_id,
            source=doc.source_id,
            object_id=doc.object_id,
            title=doc.title,
            sections=split_sections(text) if hooks else (text,),
            metadata=doc.metadata,
        )
        if not hooks:
            return document
        outcome = hooks.run(document)
        if isinstance(outcome, Drop):
            self.excluded.add(doc.document_id)
            excluded = ItemError("excluded", f"excluded by {outcome.reason}")
            self._fail(doc, "hook", excluded, report)
            return None
        if not outcome.text.strip():
            self.excluded.add(doc.document_id)
            self._fail(doc, "hook", ItemError("excluded", "the hooks left no text"), report)
            return None
        return outcome

    def _embed(
        self, texts: list[str], ids: list[list[int] | None] | None = None
    ) -> list[list[float] | ItemError]:
        return call_with_retry(lambda: embed_tokens(self.embedder, texts, ids), self.retry)

    def _embed_by_document(
        self,
        docs: list[DocumentRecord],
        chunked: dict[str, list[Chunk]],
        report: IndexReport,
        failed: set[str],
    ) -> list[list[float] | ItemError | None]:
        """Vectors for ``chunked`` embedded one document at a time; a document whose texts
        still raise is a failure record and leaves ``chunked``."""
        vectors: list[list[float] | ItemError | None] = []
        for doc in docs:
            chunks = chunked.get(doc.document_id)
            if chunks is None:
                continue
            try:
                texts = [c.embed_text for c in chunks]
                vectors.extend(self._embed(texts, self._ids_of(texts)))
            except HeadwaterError as exc:
                if not isinstance(exc, ItemError | TransientError):
                    raise
                self._fail(doc, "embed", exc, report)
                failed.add(doc.document_id)
                del chunked[doc.document_id]
            except Exception as exc:
                log.debug("embedding %s failed", doc.document_id, exc_info=True)
                self._fail(doc, "embed", exc, report)
                failed.add(doc.document_id)
                del chunked[doc.document_id]
        return vectors
