# ruff: noqa: E501  (patch texts quote source lines verbatim)
"""The mutation pins: one named text patch per guard, and the tests that must kill it.

Each ``Mutant`` breaks one guard (``old`` → ``new`` in ``file``, which must match
exactly once) and names the pytest node ids that fail because of it, cheapest first
(the runner stops at the first failure). ``scripts/mutants.py`` runs them. When code a
patch quotes moves, move the patch with it; when a guard is added, add its mutant here
(or, for who may see and send what, in ``mutant_list_access``, and for the speed-ups, in
``mutant_list_fast``; their pins run with these).
"""

from __future__ import annotations

from mutant import Mutant
from mutant_list_access import ACCESS_MUTANTS
from mutant_list_fast import FAST_PATH_MUTANTS

__all__ = ["MUTANTS", "Mutant"]

INDEXER = "src/headwater/indexer/indexer.py"
QDRANT = "src/headwater/sinks/qdrant/_sink.py"
REPAIR = "tests/correctness/test_repair.py"
EXTRA = "tests/correctness/test_invariants_extra.py"
GATES = "src/headwater/sync/gates.py"
SKIP_RULE = "tests/core/test_core_skip_rule.py"
QDRANT_SUITE = "tests/sinks/test_qdrant_conformance.py::TestQdrantInMemoryConformance"

MUTANTS: list[Mutant] = [
    Mutant(
        "a-batch-commits-before-its-content-is-written",
        "src/headwater/sync/runner.py",
        "                staged.flush()  # every text the commit points at is written first\n",
        "",
        (
            "tests/core/test_staged_content.py::test_every_text_a_sync_commits_is_in_the_store_at_its_commit",
        ),
    ),
    Mutant(
        "applied-recorded-when-the-sink-raised",
        INDEXER,
        "        return None\n\n    def _fail(",
        "        return Applied(\n"
        "            record.document_id, record.revision, record.signature, target.version, 0\n"
        "        )\n\n    def _fail(",
        (
            f"{EXTRA}::test_a_sink_failing_mid_replace_records_nothing_and_keeps_the_old_revision[sqlite]",
        ),
    ),
    Mutant(
        "applied-recorded-before-the-sink-wrote",
        INDEXER,
        "                outcome = call_with_retry(\n"
        "                    lambda: sink.replace(document, chunk_list, record.revision), self.retry\n"
        "                )",
        "                self.manifest.index_state.record_applied(target.name, [Applied(\n"
        "                    record.document_id, record.revision, record.signature,\n"
        "                    target.version, len(chunk_list))])\n"
        "                outcome = call_with_retry(\n"
        "                    lambda: sink.replace(document, chunk_list, record.revision), self.retry\n"
        "                )",
        (
            f"{EXTRA}::test_a_sink_failing_mid_replace_records_nothing_and_keeps_the_old_revision[sqlite]",
        ),
    ),
    Mutant(
        "old-chunks-deleted-before-the-new-are-embedded",
        INDEXER,
        "        prepared, failed = self._prepare([records[d] for d in to_prepare], need_vectors, report, at)",
        "        for d in to_prepare:\n"
        "            for t in self.targets:\n"
        "                if records[d].revision > 1:\n"
        "                    t.sink.delete(d, records[d].revision - 1)\n"
        "        prepared, failed = self._prepare([records[d] for d in to_prepare], need_vectors, report, at)",
        (
            f"{EXTRA}::test_a_changed_document_that_fails_to_embed_stays_searchable_in_its_old_version[sqlite]",
        ),
    ),
    Mutant(
        "tombstone-complete-without-zero-count-check",
        INDEXER,
        "        if remaining:\n",
        "        if False:\n",
        (
            f"{EXTRA}::test_a_delete_the_sink_did_not_carry_out_never_completes_the_tombstone[sqlite]",
        ),
    ),
    Mutant(
        "tombstone-complete-at-commit-time",
        "src/headwater/manifest/batch.py",
        "            detected_at=now,\n            completed_at=None,",
        "            detected_at=now,\n            completed_at=now,",
        (
            f"{EXTRA}::test_a_delete_the_sink_did_not_carry_out_never_completes_the_tombstone[sqlite]",
        ),
    ),
    Mutant(
        "qdrant-deletes-before-it-upserts",
        QDRANT,
        "            for start in range(0, len(points), UPSERT_BATCH):",
        "            self._client.delete(\n"
        "                self.collection,\n"
        "                points_selector=qm.FilterSelector(\n"
        "                    filter=qm.Filter(must=[_of_document(doc_id)], must_not=[_of_write(write)])\n"
        "                ),\n"
        "                wait=True,\n"
        "            )\n"
        "            for start in range(0, len(points), UPSERT_BATCH):",
        (f"{QDRANT_SUITE}::test_failed_replace_leaves_the_old_revision_whole",),
    ),
    Mutant(
        "qdrant-search-sees-every-write",
        QDRANT,
        "                visible = self._live_only(found.points)",
        "                visible = list(found.points)",
        (f"{QDRANT_SUITE}::test_failed_replace_leaves_the_old_revision_whole",),
    ),
    Mutant(
        "revision-restarts-after-a-purge",
        "src/headwater/manifest/batch.py",
        '        values["revision"] += floor',
        "        floor = 0",
        (
            f"{REPAIR}::test_a_document_re_created_after_its_tombstone_was_purged_is_searchable[sqlite]",
        ),
    ),
    Mutant(
        "dead-letter-blocks-newer-revisions",
        INDEXER,
        "    return died is None or record.revision <= died",
        "    return True",
        (f"{REPAIR}::test_a_dead_letter_entry_does_not_block_a_newer_revision[sqlite]",),
    ),
    Mutant(
        "absent-document-acl-update-recorded-as-applied",
        INDEXER,
        "                if outcome is WriteOutcome.ABSENT:",
        "                if False:",
        (f"{REPAIR}::test_an_acl_change_on_a_document_an_index_lost_rewrites_it[sqlite]",),
    ),
    Mutant(
        "reconcile-ignores-missing-empty-documents",
        "src/headwater/indexer/reconcile.py",
        "    if in_sink is None:\n        drift.missing.append(doc_id)",
        "    if in_sink is None and expected[1] > 0:\n        drift.missing.append(doc_id)",
        (f"{REPAIR}::test_reconcile_counts_an_applied_document_with_no_chunks_as_missing[sqlite]",),
    ),
    Mutant(
        "reconcile-calls-unconfirmed-active-documents-orphans",
        "src/headwater/indexer/reconcile.py",
        "            drift.unconfirmed.append(doc_id)",
        "            drift.orphans.append(doc_id)",
        (
            f"{REPAIR}::test_repair_after_a_crash_before_the_record_re_applies_active_documents[sqlite]",
        ),
    ),
    Mutant(
        "index-not-bound-to-its-manifest",
        "src/headwater/runtime/indexes.py",
        "            elif bound != mine:\n                sink.close()",
        "            elif False:\n                sink.close()",
        (f"{REPAIR}::test_an_index_of_a_lost_manifest_never_serves_its_old_permissions[sqlite]",),
    ),
    Mutant(
        "hint-skip-ignores-the-content-version",
        "src/headwater/sync/decisions.py",
        "        if current and trust_hint and record is not None and record.source_version == item.version:",
        "        if record is not None and record.state == ACTIVE and trust_hint and record.source_version == item.version:",
        (
            f"{SKIP_RULE}::test_decide",
            "tests/core/test_versions.py::test_a_parser_version_change_rereads_every_source_object[sqlite]",
        ),
    ),
    Mutant(
        "checksum-skip-ignores-the-content-version",
        "src/headwater/sync/decisions.py",
        "    if current and record is not None and record.checksum == checksum:",
        "    if record is not None and record.state == ACTIVE and record.checksum == checksum:",
        (f"{SKIP_RULE}::test_decide",),
    ),
    Mutant(
        "stale-owner-commits-after-a-takeover",
        "src/headwater/manifest/leases.py",
        "        raise _lost(lease, holder)\n",
        "        return\n",
        (
            "tests/core/test_leases.py::test_a_takeover_fences_every_commit_of_the_stale_owner[sqlite]",
        ),
    ),
    Mutant(
        "a-model-error-on-one-document-ends-the-drain",
        "src/headwater/indexer/prepare.py",
        "            except Exception:  # the model choked on some text: find whose, embed the rest",
        "            except ItemError:  # the model choked on some text: find whose, embed the rest",
        (
            "tests/indexing/test_unexpected_errors.py::test_an_unexpected_error_fails_its_document_and_the_rest_is_indexed[EMBEDBOMB]",
        ),
    ),
    Mutant(
        "unstorable-text-reaches-the-manifest",
        "src/headwater/sync/runner.py",
        "            storable = storable_item(item)\n",
        "            storable = item\n",
        (
            "tests/core/test_unstorable_text.py::test_unstorable_text_is_cleaned_and_an_unstorable_id_is_a_failure[sqlite]",
        ),
    ),
    Mutant(
        "search-trusts-a-stale-index",
        "src/headwater/reads.py",
        "        admitted=rt.manifest.visible_to,\n",
        "",
        (
            "tests/search/test_manifest_gate.py::test_a_revoked_document_is_not_returned_before_the_index_applies_it[keyword]",
        ),
    ),
    Mutant(
        "push-commit-ignores-the-row-it-decided-from",
        "src/headwater/manifest/batch.py",
        '        where += _at(bindparam("w_revision")',
        '        where += [] if True else _at(bindparam("w_revision")',
        (  # cheapest first: `-x` stops at the first kill
            "tests/core/test_manifest_batch_writes.py::test_a_checked_edit_of_a_row_that_moved_on_writes_nothing_and_names_it[sqlite]",
            "tests/core/test_push_core.py::test_an_older_push_decided_before_a_newer_commit_in_another_process_is_stale[sqlite]",
            "tests/core/test_push_core.py::test_an_older_push_decided_before_a_newer_commit_in_another_process_is_stale[postgres]",
            "tests/api/test_api_push_workers.py::test_interleaved_pushes_into_two_workers_keep_every_highest_acknowledged_version[postgres]",
        ),
    ),
    Mutant(
        "parsed-metadata-lost-on-a-hint-skip",
        GATES,
        "            metadata[key] = held[key]\n",
        "            pass\n",
        (
            "tests/pipeline/test_parse_sync.py::test_every_new_format_is_searchable_and_a_resync_changes_nothing[sqlite]",
        ),
    ),
    Mutant(
        "parse-settings-outside-the-content-version",
        "src/headwater/runtime/sources.py",
        "            pipeline_version=content_version(PARSER_VERSIONS, parse_options.describe()),\n",
        "            pipeline_version=content_version(PARSER_VERSIONS),\n",
        (
            "tests/pipeline/test_parse_sync.py::test_parse_settings_of_the_workspace_and_the_source_read_more_files[sqlite]",
        ),
    ),
    Mutant(
        "filesystem-read-ignores-the-listed-inode",
        "src/headwater/connectors/filesystem/_read.py",
        "        if listed is not None and (st.st_dev, st.st_ino) != listed:\n",
        "        if False:\n",
        ("tests/core/test_filesystem_links.py::test_a_file_swapped_for_another_file_is_not_read",),
    ),
    Mutant(
        "filesystem-container-members-take-no-early-checkpoint",
        "src/headwater/connectors/filesystem/__init__.py",
        "                since = every  # its members may be many: a checkpoint after them\n",
        "                pass\n",
        (
            "tests/core/test_filesystem_checkpoints.py::test_checkpoints_every_64_files_after_containers_and_resume_from_each",
        ),
    ),
    Mutant(
        "the-source-batch-size-never-reaches-the-connector",
        "src/headwater/runtime/sources.py",
        "            checkpoint_every=section.batch_size,\n",
        "",
        (
            "tests/core/test_filesystem_checkpoints.py::test_a_run_commits_a_batch_at_each_checkpoint_that_ends_one[64]",
        ),
    ),
    Mutant(
        "filesystem-followed-link-checks-only-the-root",
        "src/headwater/connectors/filesystem/__init__.py",
        '        elif not folder and self.in_scope("/".join(real)):\n',
        "        elif not folder:\n",
        (
            "tests/core/test_filesystem_links.py::test_a_followed_link_into_another_sources_files_is_never_indexed_with_its_acl[sqlite]",
        ),
    ),
    Mutant(
        "inferred-delete-budget-resets-every-run",
        "src/headwater/sync/runner.py",
        "            held=self.manifest.count_tombstones(sid, INFERRED_DELETED),\n",
        "            held=0,\n",
        (
            "tests/connectors/web/test_web_run_failures.py::test_a_lasting_404_storm_stops_at_the_fraction_across_runs",
        ),
    ),
    Mutant(
        "emptied-document-keeps-its-old-revision",
        GATES,
        "                self._empty(record, doc)\n",
        "                pass\n",
        (
            "tests/core/test_empty_documents.py::test_a_file_truncated_to_nothing_is_searchable_nowhere_even_after_a_full_sync[sqlite]",
        ),
    ),
    Mutant(
        "docx-text-read-is-uncapped",
        "src/headwater/pipeline/parse/_docx.py",
        "    if size > limits.max_text_chars:\n",
        "    if False:\n",
        ("tests/pipeline/test_docx_limits.py::test_the_text_read_is_capped_as_it_grows",),
    ),
    Mutant(
        "a-zero-interval-is-accepted",
        "src/headwater/config/strict.py",
        "    check_duration(value, MIN_INTERVAL)\n",
        "    check_duration(value)\n",
        ("tests/core/test_config.py::test_a_zero_interval_is_refused_and_a_zero_retention_is_not",),
    ),
    Mutant(
        "the-fence-ignores-the-epoch",
        "src/headwater/manifest/leases.py",
        "            t.leases.c.owner == lease.owner,\n            t.leases.c.epoch == lease.epoch,\n        )\n        .values(expires_at=utcnow() + timedelta(seconds=lease.seconds))",
        "            t.leases.c.owner == lease.owner,\n        )\n        .values(expires_at=utcnow() + timedelta(seconds=lease.seconds))",
        (
            "tests/core/test_leases.py::test_a_lease_taken_again_by_its_own_owner_fences_the_older_epoch[sqlite]",
            "tests/core/test_leases.py::test_a_lease_taken_again_by_its_own_owner_fences_the_older_epoch[postgres]",
        ),
    ),
    Mutant(
        "a-frozen-transaction-holds-the-lease-row-for-good",
        "src/headwater/manifest/db.py",
        '        event.listen(engine, "connect", _postgres_timeouts(bound_ms))\n',
        "",
        (
            "tests/core/test_lease_freeze.py::test_an_owner_frozen_inside_a_batch_is_taken_over_within_the_bound[postgres]",
        ),
    ),
    Mutant(
        "an-owner-in-another-pid-namespace-is-declared-dead",
        "src/headwater/manifest/owners.py",
        " or (boot, namespace) != (_boot(), _pid_namespace()):",
        ":",
        (
            "tests/core/test_lease_owners.py::test_only_a_provably_gone_owner_is_dead",
            "tests/core/test_lease_freeze.py::test_two_pid_1_processes_in_their_own_pid_namespaces_are_two_owners[sqlite]",
        ),
    ),
    Mutant(
        "rebuild-switch-skips-its-re-verification",
        "src/headwater/rebuilds/orchestrate.py",
        "    report = build(rt, ready)\n    problems = verify(rt, ready, report)\n",
        "    report = IndexReport()\n    problems: list[str] = []\n",
        (
            "tests/rebuild/test_generation_states.py::test_switch_verifies_the_ready_generation_again_and_refuses_a_bad_one[sqlite]",
        ),
    ),
    Mutant(
        "generation-state-changes-are-unconditional",
        "src/headwater/manifest/generations.py",
        "                    g.c.generation == generation,\n                    g.c.state.in_(allowed),\n",
        "                    g.c.generation == generation,\n",
        (
            "tests/rebuild/test_generation_states.py::test_a_retired_generation_never_becomes_verifying_ready_or_live[sqlite]",
        ),
    ),
    Mutant(
        "a-cancelled-generation-is-switched-live",
        "src/headwater/manifest/generations.py",
        "                    g.c.generation == generation,\n                    g.c.state == entered_from,\n",
        "                    g.c.generation == generation,\n",
        (
            "tests/rebuild/test_generation_states.py::test_a_retired_generation_never_becomes_verifying_ready_or_live[sqlite]",
        ),
    ),
    Mutant(
        "onnx-int8-gate-tests-the-mean-cosine",
        "src/headwater/pipeline/embed/onnx_prepare.py",
        '    if stats["min"] >= min_cosine:\n',
        '    if stats["mean"] >= min_cosine:\n',
        (
            "tests/pipeline/test_onnx_gate.py::test_one_text_below_the_threshold_refuses_int8_though_the_mean_passes",
        ),
    ),
    Mutant(
        "onnx-fp32-export-gate-tests-the-mean-cosine",
        "src/headwater/pipeline/embed/onnx_prepare.py",
        '    if stats["min"] < FP32_MIN_COSINE:\n',
        '    if stats["mean"] < FP32_MIN_COSINE:\n',
        (
            "tests/pipeline/test_onnx_gate.py::test_one_text_below_the_fp32_threshold_is_a_broken_export_though_the_mean_passes",
        ),
    ),
    Mutant(
        "onnx-fp32-export-gate-removed",
        "src/headwater/pipeline/embed/onnx_prepare.py",
        '    if stats["min"] < FP32_MIN_COSINE:\n',
        "    if False:\n",
        (
            "tests/pipeline/test_onnx_gate.py::test_one_text_below_the_fp32_threshold_is_a_broken_export_though_the_mean_passes",
        ),
    ),
    Mutant(
        "a-refused-enqueue-leaves-its-queued-marker",
        "src/headwater/executor/dispatch.py",
        "            markers.clear(source_id, task_id)\n            raise _refused(",
        "            raise _refused(",
        (
            "tests/executor/test_enqueue_refused.py::test_a_refused_enqueue_leaves_no_marker_and_names_the_broker[redis]",
        ),
    ),
    Mutant(
        "an-index-of-another-manifest-is-emptied-on-open",
        "src/headwater/runtime/indexes.py",
        "                sink.close()\n                raise self._owned_elsewhere(generation, bound)\n",
        "                sink.bind(mine, empty=True)\n",
        (
            "tests/correctness/test_index_identity.py::test_an_index_bound_to_another_manifest_is_refused_on_open_and_left_intact[sqlite]",
            "tests/correctness/test_index_identity.py::test_a_wrong_manifest_url_is_refused_and_leaves_the_index_intact[sqlite]",
        ),
    ),
    Mutant(
        "the-storage-of-another-manifests-index-is-dropped",
        "src/headwater/runtime/indexes.py",
        "            raise self._owned_elsewhere(generation, str(bound))\n        sink.drop()",
        "        sink.drop()",
        (
            "tests/correctness/test_index_identity.py::test_storage_of_an_index_bound_to_another_manifest_is_never_dropped[sqlite]",
        ),
    ),
    Mutant(
        "sync-runs-its-sources-one-after-another",
        "src/headwater/executor/local.py",
        "run_each(selected, one, limit=max_concurrent, cancel=cancel)",
        "run_each(selected, one, limit=1, cancel=cancel)",
        (
            "tests/core/test_sync_parallel.py::test_two_sources_run_at_once_and_are_reported_in_config_order",
        ),
    ),
    Mutant(
        "a-busy-source-fails-the-whole-sync",
        "src/headwater/executor/local.py",
        "                if not skip_busy:\n                    raise\n",
        "                raise\n",
        (
            "tests/core/test_sync_parallel.py::test_a_busy_source_raises_after_the_others_or_is_skipped",
        ),
    ),
    Mutant(
        "failure-groups-lose-the-extension",
        "src/headwater/manifest/failure_groups.py",
        '    return error_class == "unsupported_type" or stage == "parse"',
        "    return False",
        (
            "tests/core/test_failure_summary.py::test_open_failures_group_by_source_stage_class_and_extension[sqlite]",
        ),
    ),
    Mutant(
        "a-group-bulk-action-takes-the-whole-class",
        "src/headwater/manifest/failure_groups.py",
        "            if key_of(key.source_id, key.stage, key.error_class, object_id) == key:",
        "            if True:",
        (
            "tests/core/test_failure_summary.py::test_open_failures_group_by_source_stage_class_and_extension[sqlite]",
            "tests/api/test_api_admin_failures.py::test_failures_page_shows_each_group_with_its_fix_and_drops_one",
        ),
    ),
    Mutant(
        "a-relisting-keeps-the-old-group-labels",
        "src/headwater/manifest/groups.py",
        "                conn.execute(delete(table).where(table.c.source_id == source_id))\n",
        "                if table is not t.group_labels:\n                    conn.execute(delete(table).where(table.c.source_id == source_id))\n",
        ("tests/core/test_groups.py::test_group_labels_are_shown_and_never_matched[sqlite]",),
    ),
    Mutant(
        "nested-groups-are-not-followed",
        "src/headwater/manifest/groups.py",
        "            for _ in range(MAX_NESTING):",
        "            for _ in range(0):",
        (
            "tests/core/test_groups.py::test_nested_groups_are_expanded_transitively_at_search[sqlite]",
        ),
    ),
    Mutant(
        "a-resumed-run-forgets-what-the-killed-process-saw",
        "src/headwater/manifest/batch.py",
        "    if batch.seen_objects:\n",
        "    if False:\n",
        (
            "tests/core/test_noop_writes_no_rows.py::test_a_resumed_run_trusts_what_the_killed_process_saw[sqlite]",
        ),
    ),
    Mutant(
        "the-prune-ignores-the-seen-lists",
        "src/headwater/manifest/prunes.py",
        "            .where(not_listed)\n",
        "",
        (
            "tests/core/test_noop_writes_no_rows.py::test_a_resumed_run_trusts_what_the_killed_process_saw[sqlite]",
        ),
    ),
    Mutant(
        "a-sql-read-leaves-its-connection-open",
        "src/headwater/connectors/sql/_connector.py",
        "            self._engine.dispose()  # the read's connection: none stays open after it",
        "            pass",
        (
            "tests/connectors/sql/test_sql_integration.py::test_a_read_keeps_one_connection_for_its_pages_and_closes_it[postgresql]",
        ),
    ),
    Mutant(
        "a-nats-worker-trusts-a-delivery-number-that-went-back",
        "src/headwater/executor/nats_worker.py",
        "        delivered = max(reported, self._seen.pop(message, 0) + 1)",
        "        delivered = reported + 0 * self._seen.pop(message, 0)",
        (
            "tests/executor/test_nats_delivery_counts.py::test_a_delivery_numbered_lower_than_one_seen_counts_as_the_next",
            "tests/executor/test_nats_delivery_counts.py::test_on_the_real_jetstream_the_numbers_only_go_up_while_naks_race_pull_expiries",
        ),
    ),
    *FAST_PATH_MUTANTS,
    *ACCESS_MUTANTS,
]
