# ruff: noqa: E501  (patch texts quote source lines verbatim)
"""The mutation pins of who may see and send what: keys, principals, groups, the service.

The guards that keep a document from a reader who may not see it, or a write from a key
that may not make it: ingest and search keys, principals and group listings, and the HTTP
surface (hosts, origins, body limits, assets). Same form as ``mutant_list``, which runs
them with the rest.
"""

from __future__ import annotations

from mutant import Mutant

GATES = "src/headwater/sync/gates.py"
AUTHZ = "tests/api/test_api_authorization.py"
BROWSER = "tests/api/test_api_browser_guards.py"
LIMITS = "tests/api/test_api_body_limits.py"
SEARCH_PLAN = "tests/sinks/test_sqlite_search_plan.py"
KEYWORD_SPLIT = "tests/sinks/test_sqlite_keyword_split.py"

ACCESS_MUTANTS: list[Mutant] = [
    Mutant(
        "the-manifest-gate-ignores-the-acl",
        "src/headwater/manifest/store.py",
        "if not wanted.isdisjoint(stored_acl(acl))",
        "if True",
        (
            "tests/search/test_manifest_gate.py::test_the_manifest_check_names_only_active_documents_the_caller_may_see",
        ),
    ),
    Mutant(
        "the-manifest-gate-admits-a-deleted-document",
        "src/headwater/manifest/lookups.py",
        "        in_ids(docs.document_id, dialect), docs.state == ACTIVE\n",
        "        in_ids(docs.document_id, dialect)\n",
        (
            "tests/search/test_manifest_gate.py::test_a_deleted_document_is_not_returned_before_the_index_applies_it[keyword]",
        ),
    ),
    Mutant(
        "ingest-key-writes-to-any-source",
        "src/headwater/api/auth.py",
        'return self.role == "admin" or (self.sources is not None and source_id in self.sources)',
        "return True",
        (
            "tests/api/test_api_key_scopes.py::test_an_ingest_key_writes_only_to_the_sources_it_names",
        ),
    ),
    Mutant(
        "search-key-told-the-configured-sources",
        "src/headwater/api/v1.py",
        '    if not caller.has("admin"):\n        for source_id in body.sources:',
        "    if False:\n        for source_id in body.sources:",
        ("tests/api/test_api_key_scopes.py::test_a_search_key_is_not_told_the_configured_sources",),
    ),
    Mutant(
        "a-group-deleted-in-the-source-stays-after-sync-permissions",
        "src/headwater/manifest/groups.py",
        "                conn.execute(delete(table).where(table.c.source_id == source_id))\n",
        "                conn.execute(delete(table).where(table.c.source_id == source_id, table.c.group_principal.in_(sorted(found.labels))))\n",
        (
            "tests/core/test_groups.py::test_a_group_deleted_in_the_source_is_gone_after_a_permission_sync[sqlite]",
            "tests/core/test_groups.py::test_a_group_deleted_in_the_source_is_gone_after_a_permission_sync[postgres]",
        ),
    ),
    Mutant(
        "the-group-listing-commit-is-not-fenced",
        "src/headwater/manifest/groups.py",
        "            if lease is not None:\n                fence(conn, lease)\n            for table, rows in (",
        "            for table, rows in (",
        (
            "tests/core/test_groups.py::test_a_stale_owner_cannot_replace_the_group_listing[sqlite]",
            "tests/core/test_groups.py::test_a_stale_owner_cannot_replace_the_group_listing[postgres]",
        ),
    ),
    Mutant(
        "an-invalid-principal-keeps-serving-the-held-revision",
        GATES,
        "        if record is not None and record.state == ACTIVE and record.acl:\n            self.commit.writes.append(acl_only_write(record, ()))\n",
        "",
        (
            "tests/connectors/sql/test_sql_sync.py::test_one_row_with_a_lookalike_principal_fails_alone_and_revocations_still_apply[postgresql]",
        ),
    ),
    Mutant(
        "an-invalid-principal-fails-the-whole-sql-source",
        "src/headwater/connectors/sql/_rows.py",
        "access and access.key()]",
        "access and access.principals()]",
        (
            "tests/connectors/sql/test_sql_sync.py::test_one_row_with_a_lookalike_principal_fails_alone_and_revocations_still_apply[postgresql]",
        ),
    ),
    Mutant(
        "github-trusts-a-304-after-the-readers-changed",
        "src/headwater/connectors/github/_connector.py",
        'same = before is not None and before.get("url") == url and before.get("acl") == mark',
        'same = before is not None and before.get("url") == url',
        (
            "tests/connectors/github/test_github_sync.py::test_a_collaborator_removed_right_after_the_first_sync_loses_the_items",
        ),
    ),
    Mutant(
        "admin-router-accepts-search-keys",
        "src/headwater/api/v1_admin.py",
        'Admin = Annotated[Caller, Depends(require("admin"))]',
        'Admin = Annotated[Caller, Depends(require("search"))]',
        (f"{AUTHZ}::test_every_operation_answers_its_documented_role[search-fixed]",),
    ),
    Mutant(
        "fixed-principals-search-key-may-send-user-groups",
        "src/headwater/api/v1.py",
        "    if caller.fixed_principals:\n        if asserted:",
        "    if caller.fixed_principals:\n        if False:",
        (
            f"{AUTHZ}::test_every_operation_answers_its_documented_role[search-fixed-sending-principals]",
        ),
    ),
    Mutant(
        "open-mode-accepts-any-host",
        "src/headwater/api/guard.py",
        "    if ring.open and not loopback_host(",
        "    if False and not loopback_host(",
        (f"{BROWSER}::test_open_mode_answers_only_loopback_host_names",),
    ),
    Mutant(
        "admin-forms-accept-another-sites-origin",
        "src/headwater/api/guard.py",
        "    if method in UNSAFE and (ring.open or admin):",
        "    if method in UNSAFE and ring.open:",
        (f"{BROWSER}::test_cookie_authenticated_admin_forms_refuse_another_sites_origin",),
    ),
    Mutant(
        "the-body-is-read-before-the-key",
        "src/headwater/api/guard.py",
        "    role = role_of(route)\n",
        "    role = None\n",
        (f"{LIMITS}::test_an_unauthenticated_body_is_refused_before_it_is_read[/v1/search]",),
    ),
    Mutant(
        "chunked-bodies-are-not-counted",
        "src/headwater/api/guard.py",
        '    if "chunked" not in headers.get("transfer-encoding", "").lower():',
        "    if True:",
        (f"{LIMITS}::test_a_streamed_oversized_body_is_413_once_it_passes_the_limit",),
    ),
    Mutant(
        "docs-load-swagger-from-a-cdn",
        "src/headwater/api/app.py",
        "        docs_url=None,\n",
        '        docs_url="/docs",\n',
        (f"{BROWSER}::test_no_page_loads_assets_from_a_cdn",),
    ),
    Mutant(
        "compressed-cap-ignores-the-ratio",
        "src/headwater/pipeline/parse/_compressed.py",
        "    cap = min(limits.max_unpacked_bytes, ratio_cap)\n",
        "    cap = limits.max_unpacked_bytes\n",
        (
            "tests/pipeline/test_parse_formats.py::test_a_compression_bomb_is_too_large_with_memory_bounded",
        ),
    ),
    Mutant(
        "the-exact-vector-ranking-joins-every-chunk",
        "src/headwater/sinks/sqlite/_search.py",
        '_AMONG_VISIBLE = "fts CROSS JOIN vectors v ON v.id = fts.rowid WHERE fts MATCH ?"',
        '_AMONG_VISIBLE = "fts CROSS JOIN vectors v ON v.id = fts.rowid WHERE fts MATCH ? OR 1"',
        (
            "tests/sinks/test_sqlite_conformance.py::TestSqliteConformanceSqlRanking::test_permission_change_matrix[public_to_private-acl_update]",
        ),
    ),
    Mutant(
        "the-source-filter-is-always-left-out",
        "src/headwater/sinks/sqlite/_search.py",
        "            return sources\n",
        "            return None\n",
        ("tests/sinks/test_sqlite_conformance.py::TestSqliteConformance::test_sources_filter",),
    ),
    Mutant(
        "a-source-gap-probe-counts-the-asked-source",
        "src/headwater/sinks/sqlite/_search.py",
        '    gaps = [("source < ?", [wanted[0]])]\n',
        '    gaps = [("source <= ?", [wanted[0]])]\n',
        (
            f"{SEARCH_PLAN}::test_the_source_filter_is_left_out_only_when_every_held_source_is_asked_for",
        ),
    ),
    Mutant(
        "keyword-sources-decided-outside-its-snapshot",
        "src/headwater/sinks/sqlite/_keyword.py",
        "    with db.snapshot():\n        sources = needed_sources(db, request.sources)\n",
        "    sources = needed_sources(db, request.sources)\n    with db.snapshot():\n",
        (
            f"{SEARCH_PLAN}::test_a_source_written_by_another_process_mid_search_is_never_returned[keyword]",
        ),
    ),
    Mutant(
        "vector-sources-decided-outside-its-snapshot",
        "src/headwater/sinks/sqlite/_search.py",
        "    with db.snapshot():\n        match = acl_match(request.principals, needed_sources(db, request.sources), request.scopes)\n",
        "    match = acl_match(request.principals, needed_sources(db, request.sources), request.scopes)\n    with db.snapshot():\n",
        (
            f"{SEARCH_PLAN}::test_a_source_written_by_another_process_mid_search_is_never_returned[vector]",
        ),
    ),
    Mutant(
        "the-keyword-split-skips-the-acl-check",
        "src/headwater/sinks/sqlite/_keyword.py",
        "    seen = visible_among(db, request, list(both))\n",
        "    seen = set(both)\n",
        (f"{KEYWORD_SPLIT}::test_the_split_answers_exactly_what_the_full_statement_answers",),
    ),
    Mutant(
        "the-keyword-split-counts-the-essential-words-twice",
        "src/headwater/sinks/sqlite/_keyword.py",
        "    ranks = sorted((both[rowid] - alone[rowid], rowid) for rowid in seen)[:k]\n",
        "    ranks = sorted((both[rowid], rowid) for rowid in seen)[:k]\n",
        (f"{KEYWORD_SPLIT}::test_the_split_answers_exactly_what_the_full_statement_answers",),
    ),
    Mutant(
        "the-keyword-split-ignores-the-common-words-bound",
        "src/headwater/sinks/sqlite/_keyword.py",
        "    if -ranks[-1][0] < split.bound * (1.0 + 1e-9):\n",
        "    if False:\n",
        (
            f"{KEYWORD_SPLIT}::test_a_row_without_the_rare_word_that_outscores_the_candidates_is_not_missed",
        ),
    ),
    Mutant(
        "word-counts-outlive-a-write",
        "src/headwater/sinks/sqlite/_keyword.py",
        "        if state != self._state:\n            self._state, self._counts = state, {}\n",
        "        if self._state is None:\n            self._state, self._counts = state, {}\n",
        (
            f"{KEYWORD_SPLIT}::test_a_word_count_is_read_again_after_any_write_even_another_process_s",
        ),
    ),
    Mutant(
        "the-keyword-split-answers-with-fewer-than-k-visible",
        "src/headwater/sinks/sqlite/_keyword.py",
        "    if len(seen) < k:\n        return None\n",
        "    if not seen:\n        return None\n",
        (f"{KEYWORD_SPLIT}::test_the_split_answers_exactly_what_the_full_statement_answers",),
    ),
    Mutant(
        "the-int8-copies-narrow-to-positions-not-chunk-ids",
        "src/headwater/sinks/sqlite/_copies.py",
        "        kept: Ids = ids[cosine + slack >= floor]",
        "        kept: Ids = np.flatnonzero(cosine + slack >= floor)",
        ("tests/sinks/test_sqlite_ann.py::test_never_returns_an_invisible_chunk",),
    ),
    Mutant(
        "keyword-memory-scores-rows-the-caller-cannot-see",
        "src/headwater/sinks/sqlite/_postings.py",
        "        keep = seen[ids]\n",
        "        keep = np.ones(len(ids), np.bool_)\n",
        (
            "tests/sinks/test_sqlite_postings.py::test_memory_answers_what_fts5s_statement_answers[apsw]",
        ),
    ),
    Mutant(
        "keyword-memory-keeps-what-it-held-after-another-process-wrote",
        "src/headwater/sinks/sqlite/_postings.py",
        "        if state != self._state:\n            self._state, self._since = state, self._clock()\n",
        "        if self._state is None:\n            self._state, self._since = state, self._clock()\n",
        ("tests/sinks/test_sqlite_postings.py::test_memory_follows_another_process_writes[apsw]",),
    ),
]
