"""The mutation pins of the speed-ups: each fast path decides what the general code would.

The no-op's shortcuts (gate 1 without the hash, rows read once and kept for the gates,
the driver's own tuples, the dead-entry probe, the collector's thresholds), the sqlite
index's search plan and its int8 vector copies each skip work the general path does; a
pin here breaks one and names the test that sees a different decision, or the plan come
back. Same form as ``mutant_list``, which runs them with the rest.
"""

from __future__ import annotations

from mutant import Mutant

GATES = "src/headwater/sync/gates.py"

FAST_PATH_MUTANTS: list[Mutant] = [
    Mutant(
        "gate-1-shortcut-skips-a-metadata-only-row",
        GATES,
        '                and metadata.get("content") != UNAVAILABLE\n',
        "",
        (
            "tests/core/test_noop_signature_skip.py::test_a_metadata_only_row_is_read_again_even_as_stored[True]",
        ),
    ),
    Mutant(
        "gate-1-shortcut-ignores-the-metadata",
        GATES,
        "        and held.is_text(stored_metadata_json(metadata))\n",
        "",
        (
            "tests/core/test_noop_signature_skip.py::test_the_skip_without_the_hash_decides_as_the_hash[5-as-written]",
        ),
    ),
    Mutant(
        "gate-1-shortcut-ignores-the-acl",
        GATES,
        "                acl == record.acl\n                and metadata.get",
        "                True\n                and metadata.get",
        ("tests/core/test_noop_signature_skip.py::test_a_changed_acl_is_never_skipped",),
    ),
    Mutant(
        "the-dead-entry-probe-hides-dead-entries",
        "src/headwater/manifest/failures.py",
        "                if conn.execute(probe.limit(1)).first() is None:\n",
        "                if conn.execute(probe.limit(1)).first() is not None:\n",
        (
            "tests/core/test_noop_fast_rows.py::test_rows_and_dead_failures_are_found_by_exactly_their_ids[sqlite]",
        ),
    ),
    Mutant(
        "a-run-restores-the-thresholds-while-another-runs",
        "src/headwater/sync/garbage.py",
        "            if _runs == 0:\n                gc.set_threshold(*_saved)",
        "            gc.set_threshold(*_saved)",
        (
            "tests/core/test_sync_collections.py::test_overlapping_runs_restore_the_thresholds_when_the_last_ends",
        ),
    ),
    Mutant(
        "a-run-collects-at-the-default-threshold",
        "src/headwater/sync/garbage.py",
        "                gc.set_threshold(RUN_THRESHOLD, *_saved[1:])",
        "                pass",
        (
            "tests/core/test_sync_collections.py::test_a_no_op_of_thousands_of_files_triggers_no_collection",
        ),
    ),
    Mutant(
        "a-kept-row-is-given-twice",
        "src/headwater/sync/known.py",
        "            elif (row := read.pop(object_id)) is not None:",
        "            elif (row := read[object_id]) is not None:",
        (
            "tests/core/test_known_rows_reused.py::test_an_object_listed_twice_is_decided_from_what_its_first_batch_wrote",
        ),
    ),
    Mutant(
        "the-check-reads-the-rows-again",
        "src/headwater/sync/held.py",
        "        if known is not None and known.keeps_rows():\n",
        "        if False:\n",
        ("tests/core/test_known_rows_reused.py::test_a_no_op_reads_each_page_of_rows_once",),
    ),
    Mutant(
        "kept-rows-have-no-bound",
        "src/headwater/sync/known.py",
        "        keep = not self.full and len(read) + len(object_ids) <= KEPT",
        "        keep = True",
        (
            "tests/core/test_known_rows_reused.py::test_a_page_larger_than_what_is_kept_is_read_again_at_the_flush",
        ),
    ),
    Mutant(
        "a-driver-error-while-fetching-lookup-rows-is-raised-raw",
        "src/headwater/manifest/driver_sql.py",
        "    except conn.dialect.loaded_dbapi.Error:\n",
        "    except ZeroDivisionError:\n",
        (
            "tests/core/test_noop_fast_rows.py::test_a_driver_error_while_fetching_rows_is_raised_as_sqlalchemy_raises_it",
        ),
    ),
    Mutant(
        "the-exact-vector-ranking-lists-every-visible-id-first",
        "src/headwater/sinks/sqlite/_search.py",
        '_AMONG_VISIBLE = "fts CROSS JOIN vectors v ON v.id = fts.rowid WHERE fts MATCH ?"',
        '_AMONG_VISIBLE = "vectors v WHERE v.id IN (SELECT rowid FROM fts WHERE fts MATCH ?)"',
        (
            "tests/sinks/test_sqlite_search_plan.py::test_the_exact_vector_ranking_joins_the_acl_match_and_ranks_as_an_in_list",
        ),
    ),
    Mutant(
        "the-int8-copies-narrow-without-their-error-bound",
        "src/headwater/sinks/sqlite/_copies.py",
        "        slack = self.err[ids].astype(np.float64) + epsilon(self.dimension)",
        "        slack = epsilon(self.dimension)",
        (
            "tests/sinks/test_sqlite_copies.py::test_narrowed_rankings_equal_ranking_every_visible_chunk",
        ),
    ),
    Mutant(
        "the-int8-copies-forget-sqlite-vecs-float32-rounding",
        "src/headwater/sinks/sqlite/_copies.py",
        "    return (dimension + 8) * 2.0**-21",
        "    return 0.0",
        (
            "tests/sinks/test_sqlite_copies.py::test_sqlite_vecs_cosine_lies_within_every_copys_bound",
        ),
    ),
    Mutant(
        "the-int8-copies-miss-another-process-rewrites",
        "src/headwater/sinks/sqlite/_copies.py",
        "            self._load_changed(db)",
        "            pass",
        ("tests/sinks/test_sqlite_copies.py::test_the_copies_follow_another_process_writes",),
    ),
    Mutant(
        "a-caller-who-saw-half-the-index-checks-rows-at-any-size",
        "src/headwater/sinks/sqlite/_search.py",
        "expected > exact_below and expected >= wide_from:",
        "expected > exact_below:",
        (
            "tests/sinks/test_sqlite_sink.py::test_a_caller_who_saw_half_the_index_checks_rows_only_past_wide_from",
        ),
    ),
    Mutant(
        "the-int8-copies-grow-past-their-budget",
        "src/headwater/sinks/sqlite/_copies.py",
        "        size = max(size, min(held + held // 2, self.budget // (self.dimension + 8)))",
        "        size = max(size, held + held // 2)",
        ("tests/sinks/test_sqlite_copies.py::test_the_copies_never_hold_more_than_their_budget",),
    ),
    Mutant(
        "a-one-shot-search-loads-the-int8-copies",
        "src/headwater/sinks/sqlite/_caches.py",
        "        if self._vector_searches < LOADED_FROM or self.options.vector_copies_mb <= 0:",
        "        if self.options.vector_copies_mb <= 0:",
        ("tests/sinks/test_sqlite_copies.py::test_a_one_shot_search_loads_no_copies",),
    ),
    Mutant(
        "keyword-memory-averages-the-text-columns-only",
        "src/headwater/sinks/sqlite/_postings.py",
        "        average = float(totals[1:].sum()) / float(self._rows)",
        "        average = float(totals[1:3].sum()) / float(self._rows)",
        (
            "tests/sinks/test_sqlite_postings.py::test_memory_answers_what_fts5s_statement_answers[apsw]",
        ),
    ),
    Mutant(
        "keyword-memory-loads-past-its-budget",
        "src/headwater/sinks/sqlite/_postings.py",
        "        if size * 9 > self.budget:",
        "        if False:",
        ("tests/sinks/test_sqlite_postings.py::test_past_its_budget_the_memory_answers_in_sql",),
    ),
    Mutant(
        "a-one-shot-search-loads-the-keyword-memory",
        "src/headwater/sinks/sqlite/_caches.py",
        "        if self._searches < LOADED_FROM or self.options.search_memory_mb <= 0:",
        "        if self.options.search_memory_mb <= 0:",
        ("tests/sinks/test_sqlite_postings.py::test_a_one_shot_search_loads_nothing",),
    ),
    Mutant(
        "keyword-memory-loads-at-the-first-search-after-a-write",
        "src/headwater/sinks/sqlite/_postings.py",
        "        if self.searches < STEADY or self._clock() - self._since < self.settle_s:\n",
        "        if self._clock() - self._since < self.settle_s:\n",
        ("tests/sinks/test_sqlite_postings.py::test_a_one_shot_search_loads_nothing",),
    ),
    Mutant(
        "keyword-memory-never-drops-a-word",
        "src/headwater/sinks/sqlite/_postings.py",
        "        if self._held <= self.budget:\n            return  # without listing",
        "        if True:\n            return  # without listing",
        ("tests/sinks/test_sqlite_postings.py::test_words_past_the_budget_push_out_the_oldest",),
    ),
    Mutant(
        "keyword-memory-scores-in-float32",
        "src/headwater/sinks/sqlite/_postings.py",
        "        f = freqs.astype(np.float64)\n",
        "        f = freqs\n",
        (
            "tests/sinks/test_sqlite_postings.py::test_memory_answers_what_fts5s_statement_answers[apsw]",
        ),
    ),
    Mutant(
        "keyword-memory-loads-before-the-index-state-settles",
        "src/headwater/sinks/sqlite/_postings.py",
        "        if self.searches < STEADY or self._clock() - self._since < self.settle_s:\n",
        "        if self.searches < STEADY:\n",
        (
            "tests/sinks/test_sqlite_postings.py::test_nothing_loads_until_the_index_state_has_settled",
        ),
    ),
    Mutant(
        "keyword-memory-scores-words-fts5-splits-or-folds",
        "src/headwater/sinks/sqlite/_postings.py",
        "        if not all(w.isascii() and w.isalnum() for w in words):\n",
        "        if False:\n",
        (
            "tests/sinks/test_sqlite_postings.py::test_memory_answers_what_fts5s_statement_answers[apsw]",
        ),
    ),
    Mutant(
        "held-as-listed-ignores-the-acl",
        "src/headwater/sync/held.py",
        "            if row[1:7] == values and (not title or title == row[7]):\n",
        "            if row[1:6] == values[:5] and (not title or title == row[7]):\n",
        (
            "tests/core/test_held_as_listed.py::test_each_way_a_document_differs_is_left_to_the_gates[sqlite]",
            "tests/core/test_held_as_listed.py::test_a_random_batch_skips_exactly_what_the_gates_leave_unchanged[postgres]",
        ),
    ),
    Mutant(
        "held-as-listed-ignores-the-listed-title",
        "src/headwater/sync/held.py",
        "            if row[1:7] == values and (not title or title == row[7]):\n",
        "            if row[1:7] == values:\n",
        (
            "tests/core/test_held_as_listed.py::test_each_way_a_document_differs_is_left_to_the_gates[sqlite]",
        ),
    ),
    Mutant(
        "held-as-listed-skips-a-dead-failure",
        "src/headwater/sync/held.py",
        "            if dead:\n",
        "            if False:\n",
        (
            "tests/core/test_held_as_listed.py::test_each_way_a_document_differs_is_left_to_the_gates[sqlite]",
        ),
    ),
    Mutant(
        "held-as-listed-skips-what-the-rules-exclude",
        "src/headwater/sync/held.py",
        "            if rules is not None and rules.excludes(item, started):\n",
        "            if False:\n",
        (
            "tests/core/test_held_as_listed.py::test_each_way_a_document_differs_is_left_to_the_gates[sqlite]",
            "tests/core/test_held_as_listed.py::test_a_random_batch_skips_exactly_what_the_gates_leave_unchanged[postgres]",
        ),
    ),
    Mutant(
        "held-as-listed-skips-a-sequenced-document",
        "src/headwater/sync/held.py",
        "            if type(item) is not SourceDocument or item.sequence is not None:\n",
        "            if type(item) is not SourceDocument:\n",
        (
            "tests/core/test_held_as_listed.py::test_each_way_a_document_differs_is_left_to_the_gates[sqlite]",
        ),
    ),
    Mutant(
        "held-as-listed-skips-a-metadata-only-document",
        "src/headwater/sync/held.py",
        '            if metadata.get("content") == UNAVAILABLE:\n',
        "            if False:\n",
        (
            "tests/core/test_held_as_listed.py::test_each_way_a_document_differs_is_left_to_the_gates[sqlite]",
        ),
    ),
    Mutant(
        "held-as-listed-not-asked-by-the-runner",
        "src/headwater/sync/runner.py",
        "                held, part = self._held.split(part, self._known)"
        " if self._held else ([], part)\n",
        "                held: list[str] = []\n",
        ("tests/core/test_held_as_listed.py::test_a_no_op_reads_no_full_row_of_an_unchanged_file",),
    ),
    Mutant(
        "held-as-listed-asked-on-a-full-sync",
        "src/headwater/sync/runner.py",
        "        self._held = None if self._full else HeldAsListed(",
        "        self._held = HeldAsListed(",
        ("tests/core/test_held_as_listed.py::test_a_no_op_reads_no_full_row_of_an_unchanged_file",),
    ),
    Mutant(
        "a-range-of-ids-gives-rows-not-asked",
        "src/headwater/manifest/lookups.py",
        "    return [row for row in rows if row[key] in asked]\n",
        "    return list(rows)\n",
        (
            "tests/core/test_noop_fast_rows.py::test_ids_close_together_or_far_apart_find_exactly_their_rows[sqlite]",
        ),
    ),
    Mutant(
        "a-range-of-ids-far-apart-is-read-whole",
        "src/headwater/manifest/lookups.py",
        "    if len(rows) >= limit:\n        return None\n",
        "",
        (
            "tests/core/test_noop_fast_rows.py::test_ids_close_together_or_far_apart_find_exactly_their_rows[sqlite]",
        ),
    ),
    Mutant(
        "a-part-of-ids-is-never-read-as-a-range",
        "src/headwater/manifest/lookups.py",
        "    ranged = _range_sql(dialect, tuple(columns)) if listed else None\n",
        "    ranged = None\n",
        (
            "tests/core/test_noop_fast_rows.py::test_ids_close_together_or_far_apart_find_exactly_their_rows[sqlite]",
        ),
    ),
    Mutant(
        "a-driver-statement-leaves-timestamps-as-stored",
        "src/headwater/manifest/driver_sql.py",
        "        if not converted:\n            return rows\n",
        "        return rows\n",
        (
            "tests/core/test_driver_sql.py::test_driver_statements_answer_what_sqlalchemy_answers[sqlite]",
        ),
    ),
    Mutant(
        "a-driver-statement-drops-the-literals-it-binds",
        "src/headwater/manifest/driver_sql.py",
        "            defaults[name] = bind.effective_value\n",
        "            pass\n",
        (
            "tests/core/test_driver_sql.py::test_driver_statements_answer_what_sqlalchemy_answers[postgres]",
        ),
    ),
    Mutant(
        "the-gate-shows-hits-past-the-first-document-not-asked",
        "src/headwater/search/results.py",
        "        end = first_at[order[asked]] if asked < len(order) else len(hits)\n",
        "        end = len(hits)\n",
        ("tests/search/test_gate_in_rank_order.py",),
    ),
    Mutant(
        "the-gate-asks-about-every-document",
        "src/headwater/search/results.py",
        "    asked, step = 0, 2 * k\n",
        "    asked, step = 0, len(order)\n",
        (
            "tests/search/test_gate_in_rank_order.py::test_a_search_asks_the_manifest_about_the_first_documents_only",
        ),
    ),
    Mutant(
        "the-gate-stops-short-of-k-results",
        "src/headwater/search/results.py",
        "        if len(found) >= k or asked == len(order):\n",
        "        if found or asked == len(order):\n",
        ("tests/search/test_gate_in_rank_order.py",),
    ),
    Mutant(
        "two-list-fusion-misses-a-chunk-absent-from-one-list",
        "src/headwater/search/fusion.py",
        "        total = {c: 0.0 + w0 * s0.get(c, 0.0) + w1 * s1.get(c, 0.0) for c in first}\n",
        "        total = {c: 0.0 + w0 * s0.get(c, 1.0) + w1 * s1.get(c, 0.0) for c in first}\n",
        (
            "tests/sinks/test_fusion.py::test_every_method_ranks_as_the_weighted_sum_with_ties_in_first_met_order",
        ),
    ),
    Mutant(
        "fusion-ranks-ties-in-last-met-order",
        "src/headwater/search/fusion.py",
        "    best = sorted(total, key=total.__getitem__, reverse=True)\n",
        "    best = sorted(total, key=total.__getitem__)[::-1]\n",
        (
            "tests/sinks/test_fusion.py::test_every_method_ranks_as_the_weighted_sum_with_ties_in_first_met_order",
        ),
    ),
    Mutant(
        "the-search-pool-lets-every-search-run-at-once",
        "src/headwater/api/search_pool.py",
        "        return await anyio.to_thread.run_sync(call, limiter=self._limiter)\n",
        "        return await anyio.to_thread.run_sync(call)\n",
        ("tests/api/test_api_search_pool.py",),
    ),
    Mutant(
        "serve-ignores-search-threads",
        "src/headwater/api/app.py",
        "        app.state.search_pool = SearchPool(threads_for(svc.ws.config))\n",
        "        app.state.search_pool = SearchPool(2)\n",
        (
            "tests/api/test_api_search_pool.py::test_serve_runs_search_threads_at_once_and_queues_the_rest",
        ),
    ),
    Mutant(
        "workers-never-close-connections-for-balance",
        "src/headwater/api/balance.py",
        "        if not server or not server[1] or not self._balance.take(server[1]):\n",
        "        if True:\n",
        ("tests/api/test_api_balance.py::test_connections_move_to_a_worker_that_had_none",),
    ),
    Mutant(
        "serve-does-not-tell-workers-how-many-they-are",
        "src/headwater/cli/serve.py",
        "        os.environ[WORKERS_ENV] = str(workers)",
        "        os.environ['HEADWATER_UNUSED'] = str(workers)",
        ("tests/api/test_api_balance.py::test_connections_move_to_a_worker_that_had_none",),
    ),
    Mutant(
        "the-share-is-rounded-down",
        "src/headwater/api/balance.py",
        "    return max(0, mine - math.ceil(len(everyone) / workers))\n",
        "    return max(0, mine - len(everyone) // workers - 1)\n",
        ("tests/api/test_api_balance.py::test_connections_move_to_a_worker_that_had_none",),
    ),
    Mutant(
        "startup-leaves-its-objects-to-the-collector",
        "src/headwater/api/app.py",
        "        gc.freeze()\n",
        "",
        ("tests/api/test_api_balance.py::test_startup_freezes_what_it_made",),
    ),
    Mutant(
        "the-key-check-runs-on-a-thread",
        "src/headwater/api/auth.py",
        "    async def __call__(\n",
        "    def __call__(\n",
        (
            "tests/api/test_api_search_pool.py::test_no_threads_a_search_request_never_leaves_the_loop",
        ),
    ),
    Mutant(
        "searches-on-the-loop-run-back-to-back",
        "src/headwater/api/search_pool.py",
        "            await anyio.sleep(0)\n",
        "",
        (
            "tests/api/test_api_search_pool.py"
            "::test_no_threads_one_search_at_a_time_on_the_loop_in_arrival_order",
        ),
    ),
    Mutant(
        "no-threads-still-goes-to-a-thread",
        "src/headwater/api/search_pool.py",
        "            return await self._on_the_loop(call)\n",
        "            return await anyio.to_thread.run_sync(call)\n",
        (
            "tests/api/test_api_search_pool.py"
            "::test_no_threads_one_search_at_a_time_on_the_loop_in_arrival_order",
        ),
    ),
]
