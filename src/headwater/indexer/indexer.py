"""The indexer: drain pending work from the manifest into every sink.

Pending work for a sink is the set of documents whose manifest revision is ahead of the
revision that sink confirmed. Per batch: chunk and embed first (a changed document's new
chunks exist before any old chunk is touched, invariant 6), then per sink replace,
delete or update the ACL, and only after the sink confirmed record its applied revision
(invariant 4). An ACL-only change re-embeds nothing, unless the sink answers ABSENT (it
lost the document): then the document is written in full from the content store. One
document's failure is a failure record; the rest of its batch is indexed. A document
indexed by its metadata because its chunking failed (``indexer.prepare``) is recorded at
``STOOD_IN``'s version: its failure stays open, and once it is redriven the document is
pending again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from headwater import failpoints
from headwater.errors import (
    Cancelled,
    ItemError,
    TransientError,
    error_class_of,
)
from headwater.indexer.prepare import Prepared, Preparer
from headwater.indexer.report import IndexProgress, IndexReport
from headwater.manifest.content import ContentStore
from headwater.manifest.index_state import Applied, PendingWork
from headwater.manifest.records import ACTIVE, DocumentRecord, FailureWrite
from headwater.manifest.store import Manifest
from headwater.pipeline.chunk import ChunkerSettings
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.hooks import HookSet
from headwater.retry import RetryPolicy, call_with_retry
from headwater.sinks.base import Sink, WriteOutcome
from headwater.types import EmbeddedChunk, IndexDocument

log = logging.getLogger(__name__)

INDEX_STAGES = ("chunk", "embed")
STOOD_IN = "+unavailable"
"""Appended to the index version recorded for a document indexed by its metadata only:
it never equals an index version, so the document is pending while its failure, dead,
blocks it, and is chunked again once the failure is redriven."""


@dataclass
class IndexTarget:
    """One sink (one index generation; ``name`` is the generation's key) and its index
    version."""

    name: str
    sink: Sink
    version: str


class Indexer:
    """Drains pending documents of the manifest into its target sinks, batch by batch."""

    def __init__(
        self,
        manifest: Manifest,
        content_store: ContentStore,
        targets: Sequence[IndexTarget],
        embedder_factory: Callable[[], Embedder],
        pipeline_version: str,
        chunker: ChunkerSettings,
        *,
        batch_size: int = 32,
        retry: RetryPolicy | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        progress: Callable[[IndexProgress], None] | None = None,
        hooks: HookSet | None = None,
        stand_in: Callable[[str], bool] = lambda _source: True,
    ) -> None:
        self.hooks = hooks or HookSet()
        self.stand_in = stand_in  # whether a source's unchunkable documents stand in
        self.excluded: set[str] = set()  # dropped by a hook in the last prepared batch
        self.stood_in: set[str] = set()  # indexed by their metadata in the last batch
        self.manifest = manifest
        self.content_store = content_store
        self.targets = list(targets)
        self._embedder_factory = embedder_factory
        self._embedder: Embedder | None = None
        self.pipeline_version = pipeline_version
        self.chunker = chunker
        self.batch_size = batch_size
        self.retry = retry or RetryPolicy(attempts=3, initial_wait=0.2)
        self.should_stop = should_stop
        self.progress = progress

    @property
    def embedder(self) -> Embedder:
        """The embedder, built by its factory on first use."""
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        return self._embedder

    def pending_count(self) -> dict[str, int]:
        """The number of documents pending for each target sink, by sink name."""
        return {
            t.name: self.manifest.index_state.pending_count(t.name, t.version) for t in self.targets
        }

    def drain(
        self, *, only: Sequence[str] | None = None, complete_tombstones: bool = True
    ) -> IndexReport:
        """Apply every pending document to every sink; safe to call at any time.

        ``complete_tombstones=False`` leaves tombstone completion to the caller (when other
        indexers serve other generations, only all of them together can complete one)."""
        report = IndexReport()
        cursors: dict[str, str | None] = {t.name: "" for t in self.targets}
        skipped = self._blocked_documents()
        total = max(self.pending_count().values(), default=0) if self.progress else 0
        done = 0
        if self.progress is not None and total:
            self.progress(IndexProgress(0, total, 0))  # a new drain starts at zero
        while any(c is not None for c in cursors.values()) and not self.should_stop():
            work: dict[str, dict[str, PendingWork]] = {}
            records: dict[str, DocumentRecord] = {}
            for target in self.targets:
                after = cursors[target.name]
                if after is None:
                    continue
                batch = self.manifest.index_state.pending(
                    target.name, target.version, limit=self.batch_size, after=after, only=only
                )
                exhausted = len(batch) < self.batch_size
                cursors[target.name] = None if exhausted else batch[-1].document.document_id
                for pw in batch:
                    if _blocked(skipped[target.name], pw.document):
                        continue
                    work.setdefault(pw.document.document_id, {})[target.name] = pw
                    records[pw.document.document_id] = pw.document
            if work:
                started = time.monotonic()
                at = (done, max(total, done + len(work)))
                try:
                    self._apply_batch(work, records, report, at)
                except Cancelled as stopped:  # within one embedding slice of the request
                    log.info("indexing stopped: %s", stopped)
                    break
                done += len(work)
                log.info(
                    "index batch: %d documents, %d chunks so far, %.2f s",
                    len(work),
                    report.chunks,
                    time.monotonic() - started,
                )
                if self.progress is not None:
                    self.progress(IndexProgress(done, max(total, done), report.chunks))
        if complete_tombstones:
            self.complete_tombstones([t.name for t in self.targets])
        return report

    def _blocked_documents(self) -> dict[str, dict[str, int | None]]:
        """Documents whose index failures are in the DLQ, with the revision that died.

        That revision is not retried until redriven; a newer revision is indexed.
        """
        failures = self.manifest.failures
        shared = _merge(failures.open_documents("embed"), failures.open_documents("chunk"))
        return {
            t.name: _merge(shared, failures.open_documents(f"index:{t.name}")) for t in self.targets
        }

    def _superseded(self, doc: DocumentRecord) -> bool:
        """Whether the manifest moved on from ``doc``'s content since it was read (a sync
        committed a new revision, and housekeeping may have collected the old text)."""
        now = self.manifest.document(doc.document_id)
        superseded = now is None or now.state != ACTIVE or now.checksum != doc.checksum
        if superseded:
            log.info("%s changed while it was being indexed; its new revision is indexed "
                     "by the next drain", doc.document_id)  # fmt: skip
        return superseded

    def _needs_content(self, record: DocumentRecord, pw: PendingWork, target: IndexTarget) -> bool:
        if record.state != ACTIVE:
            return False
        acl_only = (
            pw.applied_revision is not None
            and pw.applied_signature == record.signature
            and pw.applied_pipeline == target.version
        )
        return not acl_only

    def _apply_batch(
        self,
        work: dict[str, dict[str, PendingWork]],
        records: dict[str, DocumentRecord],
        report: IndexReport,
        at: tuple[int, int] = (0, 0),
    ) -> None:
        """Prepare and apply one batch; ``at`` (documents done, total) is where the
        drain's progress stands, reported again as the batch's chunks are embedded."""
        by_name = {t.name: t for t in self.targets}
        self.excluded, self.stood_in = set(), set()
        need_vectors = any(
            by_name[name].sink.capabilities.vector
            and self._needs_content(records[d], pw, by_name[name])
            for d, per in work.items()
            for name, pw in per.items()
        )
        to_prepare = [
            d
            for d, per in work.items()
            if any(self._needs_content(records[d], pw, by_name[n]) for n, pw in per.items())
        ]
        prepared, failed = self._prepare([records[d] for d in to_prepare], need_vectors, report, at)
        for target in self.targets:
            applied: list[Applied] = []
            for doc_id, per in work.items():
                pw = per.get(target.name)
                if pw is None or doc_id in failed:
                    continue
                result = self._apply_one(target, records[doc_id], pw, prepared.get(doc_id), report)
                if result is not None:
                    applied.append(result)
            failpoints.failpoint(failpoints.AFTER_SINK_WRITE_BEFORE_RECORD)
            self.manifest.index_state.record_applied(target.name, applied)
            ok = [a.document_id for a in applied]
            self.manifest.failures.resolve(ok, (f"index:{target.name}", f"delete:{target.name}"))
            if target is not self.targets[-1] and applied:
                failpoints.failpoint(failpoints.BETWEEN_SINKS)
        done = [d for d in to_prepare if d not in failed]
        # a document indexed by its metadata keeps its chunk failure open
        self.manifest.failures.resolve([d for d in done if d not in self.stood_in], INDEX_STAGES)
        # a hook's exclusion stays recorded while the hook drops the document
        self.manifest.failures.resolve([d for d in done if d not in self.excluded], ("hook",))
        failpoints.failpoint(failpoints.AFTER_INDEX_BATCH)

    def _prepare(
        self,
        docs: list[DocumentRecord],
        need_vectors: bool,
        report: IndexReport,
        at: tuple[int, int] = (0, 0),
    ) -> tuple[dict[str, Prepared], set[str]]:
        progress, (done, total), before = self.progress, at, report.chunks

        def embedded(chunks: int) -> None:
            if progress is not None:
                progress(IndexProgress(done, total, before + chunks))

        preparer = Preparer(
            self.content_store,
            lambda: self.embedder,
            self.pipeline_version,
            self.chunker,
            self.retry,
            fail=self._fail,
            superseded=self._superseded,
            should_stop=self.should_stop,
            embedded=embedded if progress is not None else None,
            hooks=self.hooks,
            stand_in=self.stand_in,
        )
        prepared, failed = preparer.prepare(docs, need_vectors, report)
        self.excluded |= preparer.excluded  # emptied per batch (_apply_batch)
        self.stood_in |= preparer.stood_in
        return prepared, failed

    def _delete_verified(
        self, target: IndexTarget, record: DocumentRecord, report: IndexReport
    ) -> Applied:
        """Delete the document from ``target``'s sink and check it holds none of its chunks
        (else a retryable ``ItemError``: the tombstone completes only once it is gone)."""
        sink = target.sink
        call_with_retry(lambda: sink.delete(record.document_id, record.revision), self.retry)
        failpoints.failpoint(failpoints.MID_DELETE)
        remaining = sink.count(record.document_id)
        if remaining:
            raise ItemError(
                "delete_not_verified",
                f"{target.name} still holds {remaining} chunks of {record.document_id} "
                "after a delete; run `headwater reconcile --repair`",
                permanent=False,
            )
        report.deleted += 1
        return Applied(record.document_id, record.revision, None, target.version, 0)

    def _apply_one(
        self,
        target: IndexTarget,
        record: DocumentRecord,
        pw: PendingWork,
        prepared: Prepared | None,
        report: IndexReport,
    ) -> Applied | None:
        sink = target.sink
        stage = f"index:{target.name}" if record.state == ACTIVE else f"delete:{target.name}"
        try:
            if record.state != ACTIVE:
                return self._delete_verified(target, record, report)
            document = _index_document(record, prepared)
            if prepared is None:  # ACL-only change: no chunking, no embedding
                outcome = call_with_retry(
                    lambda: sink.update_access(record.document_id, record.access, record.revision),
                    self.retry,
                )
                if outcome is WriteOutcome.ABSENT:  # the index lost it: write it in full
                    fresh, failed = self._prepare([record], sink.capabilities.vector, report)
                    if record.document_id in failed:
                        return None
                    prepared = fresh[record.document_id]
                else:
                    chunks = sink.count(record.document_id)
                    report.acl_updates += 1
            if prepared is not None:
                chunk_list = prepared.chunks
                if not sink.capabilities.vector:
                    chunk_list = [EmbeddedChunk(chunk=c.chunk, vector=None) for c in chunk_list]
                outcome = call_with_retry(
                    lambda: sink.replace(document, chunk_list, record.revision), self.retry
                )
                chunks = len(chunk_list)
                report.replaced += outcome is not WriteOutcome.STALE  # else it counts as failed
            if outcome is WriteOutcome.STALE:
                raise ItemError(
                    "stale_in_sink",
                    f"{target.name} holds a newer revision of {record.document_id} than the "
                    f"manifest ({record.revision}), e.g. a manifest restored from a backup; run "
                    f"`headwater reconcile --sink {target.name} --repair`",
                )
            version = target.version + (STOOD_IN if record.document_id in self.stood_in else "")
            return Applied(record.document_id, record.revision, record.signature, version, chunks)
        except (ItemError, TransientError) as exc:
            self._fail(record, stage, exc, report)
        except Exception as exc:  # a sink's own error for one document: record and go on
            log.debug("sink %s failed on %s", target.name, record.document_id, exc_info=True)
            self._fail(record, stage, exc, report)
        return None

    def _fail(
        self, record: DocumentRecord, stage: str, exc: BaseException, report: IndexReport
    ) -> None:
        permanent = isinstance(exc, ItemError) and exc.permanent
        self.manifest.failures.record(
            [
                FailureWrite(
                    source_id=record.source_id,
                    object_id=record.object_id,
                    document_id=record.document_id,
                    locator=record.locator,
                    stage=stage,
                    error_class=error_class_of(exc),
                    message=str(exc) or type(exc).__name__,
                    pipeline_version=self.pipeline_version,
                    source_version=record.source_version,
                    fetch_ref=None,
                    permanent=permanent,
                    revision=record.revision,
                )
            ]
        )
        report.failed += 1

    def complete_tombstones(self, names: Sequence[str]) -> None:
        """Mark complete the tombstones every one of ``names`` confirmed."""
        pending = self.manifest.index_state.incomplete_tombstones()
        if pending:
            self.manifest.index_state.complete_tombstones(pending, names)


def _merge(a: dict[str, int | None], b: dict[str, int | None]) -> dict[str, int | None]:
    merged = dict(a)
    for doc_id, revision in b.items():
        if doc_id not in merged:
            merged[doc_id] = revision
        elif merged[doc_id] is not None:
            merged[doc_id] = None if revision is None else max(revision, merged[doc_id] or 0)
    return merged


def _blocked(dead: dict[str, int | None], record: DocumentRecord) -> bool:
    """A dead-letter entry blocks the revision that died (all, if unknown), never a newer one."""
    if record.document_id not in dead:
        return False
    died = dead[record.document_id]
    return died is None or record.revision <= died


def _index_document(record: DocumentRecord, prepared: Prepared | None) -> IndexDocument:
    """The document as a sink stores it: the manifest's record, with the title and
    metadata its hooks gave it (when they gave any)."""
    return IndexDocument(
        document_id=record.document_id,
        source=record.source_id,
        title=prepared.title if prepared and prepared.title is not None else record.title,
        locator=record.locator,
        access=record.access,
        metadata=prepared.metadata
        if prepared and prepared.metadata is not None
        else record.metadata,
    )
