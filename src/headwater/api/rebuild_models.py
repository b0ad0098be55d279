"""The bodies of ``/v1/rebuilds``: ``headwater rebuild ... --json`` as pydantic models.

As in ``headwater.api.models``: keys in the JSON's order, keys an outcome does not have
default to None and are left out (``response_model_exclude_unset``), and no key is ever
dropped (``extra="allow"``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from headwater.api.hygiene import CleanModel
from headwater.api.models import Body


class RebuildRequest(CleanModel):
    """``POST /v1/rebuilds``: the options of ``headwater rebuild [INDEX ...]``."""

    indexes: list[str] | None = Field(
        default=None,
        max_length=1000,
        description="Indexes to rebuild (default: every index whose settings changed).",
    )
    force: bool = Field(default=False, description="Rebuild even when nothing changed.")
    switch: bool = Field(
        default=True, description="false: build and verify, leave it ready (`--no-switch`)."
    )


class DocumentCounts(Body):
    """Documents an index pass wrote, deleted, re-permissioned and failed."""

    replaced: int
    deleted: int
    acl_updates: int
    failed: int


class ChunkCounts(Body):
    """Chunks written, embedded and found in the embedding cache."""

    written: int
    embedded: int
    cache_hits: int


class IndexReportBody(Body):
    """What an index pass did (``headwater index --json``)."""

    documents: DocumentCounts
    chunks: ChunkCounts
    duration_s: float


class RebuildEntryBody(Body):
    """One index of a rebuild: ``result`` is up_to_date, stopped, cancelled, failed,
    switched or ready."""

    index: str
    generation: int | None = Field(default=None, description="Absent when up to date.")
    index_report: IndexReportBody | None = Field(
        default=None, description="Absent when up to date."
    )
    result: str
    live: int | None = Field(default=None, description="Only when up to date or cancelled.")
    problems: list[str] | None = Field(default=None, description="Only when failed.")


class RebuildReportBody(Body):
    """``headwater rebuild --json``: one entry per index."""

    indexes: list[RebuildEntryBody]


class RebuildJobBody(Body):
    """A rebuild started by ``POST /v1/rebuilds``; ``report`` once it is done."""

    job_id: str
    indexes: list[str] | None
    force: bool
    switch: bool
    status: str = Field(description="queued, running, done or failed")
    report: RebuildReportBody | None
    error: str | None


class SwitchBody(Body):
    """``headwater rebuild switch INDEX --json``: ``result`` is switched, failed or
    cancelled."""

    index: str
    generation: int
    result: str
    problems: list[str] | None = Field(default=None, description="Only when failed.")
    index_report: IndexReportBody | None = Field(default=None, description="Only when switched.")


class RollbackBody(Body):
    """``headwater rebuild rollback INDEX --json``."""

    index: str
    live: int | None
    result: str | None = Field(default=None, description='Only "stopped" (nothing switched).')
    pending: int | None = Field(default=None, description="Absent when stopped.")
    index_report: IndexReportBody | None = Field(default=None, description="Absent when stopped.")


class CancelBody(Body):
    """``headwater rebuild cancel INDEX --json``: the generation retired."""

    index: str
    cancelled: int


class RetireBody(Body):
    """``headwater rebuild retire INDEX --json``: the generations retired."""

    index: str
    retired: list[int]


class GenerationBody(Body):
    """One generation with its progress counts."""

    generation: int
    state: str
    index_version: str
    settings: dict[str, Any]
    documents: int
    documents_total: int
    chunks: int
    pending: int | None
    created_at: str | None
    switched_at: str | None
    problems: list[str]


class IndexGenerationsBody(Body):
    """One index's generations and the number of the live one."""

    name: str
    live: int | None
    generations: list[GenerationBody]


class RebuildStatusBody(Body):
    """``headwater rebuild status --json``."""

    indexes: list[IndexGenerationsBody]
