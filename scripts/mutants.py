# ruff: noqa: E501  (patch texts quote source lines verbatim)
"""Mutation pins: break one guard at a time and check that its named tests fail.

Each mutant is a named text patch (file, old text, new text) of one guard, plus the
pytest node ids that must kill it. For each mutant the script copies ``src/`` and
``tests/`` (and ``pyproject.toml``) to a temporary directory, applies that one patch
there, runs the killing tests with ``PYTHONPATH`` pointing at the copy, and reports
``killed`` (some test failed), ``survived`` (all passed), ``stale-patch`` (its old text
is not found exactly once) or ``broken`` (pytest did not run the tests to a failure: a
collection or syntax error). It exits 1 unless every mutant was killed.

    .venv/bin/python scripts/mutants.py            # every mutant
    .venv/bin/python scripts/mutants.py -k qdrant  # mutants whose name contains "qdrant"
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    old: str
    new: str
    killers: tuple[str, ...]


INDEXER = "src/headwater/indexer/indexer.py"
QDRANT = "src/headwater/sinks/qdrant/_sink.py"
REPAIR = "tests/correctness/test_repair.py"
EXTRA = "tests/correctness/test_invariants_extra.py"
GATES = "src/headwater/sync/gates.py"
SKIP_RULE = "tests/core/test_core_skip_rule.py"
QDRANT_SUITE = "tests/sinks/test_qdrant_conformance.py::TestQdrantInMemoryConformance"

MUTANTS: list[Mutant] = [
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
        "        prepared, failed = self._prepare([records[d] for d in to_prepare], need_vectors, report)",
        "        for d in to_prepare:\n"
        "            for t in self.targets:\n"
        "                if records[d].revision > 1:\n"
        "                    t.sink.delete(d, records[d].revision - 1)\n"
        "        prepared, failed = self._prepare([records[d] for d in to_prepare], need_vectors, report)",
        (
            f"{EXTRA}::test_a_changed_document_that_fails_to_embed_stays_searchable_in_its_old_version[sqlite]",
        ),
    ),
    Mutant(
        "tombstone-complete-without-zero-count-check",
        INDEXER,
        "                if remaining:\n",
        "                if False:\n",
        (
            f"{EXTRA}::test_a_delete_the_sink_did_not_carry_out_never_completes_the_tombstone[sqlite]",
        ),
    ),
    Mutant(
        "tombstone-complete-at-commit-time",
        "src/headwater/manifest/store.py",
        "                        detected_at=now,\n                        completed_at=None,",
        "                        detected_at=now,\n                        completed_at=now,",
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
        "src/headwater/manifest/store.py",
        '                    values["revision"] += self._take_floor(conn, write.document_id)',
        "                    self._take_floor(conn, write.document_id)",
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
        "src/headwater/workspace_indexes.py",
        "            binding = sink.bind(self.manifest.manifest_id)",
        "            binding = Binding.KEPT",
        (f"{REPAIR}::test_an_index_of_a_lost_manifest_never_serves_its_old_permissions[sqlite]",),
    ),
    Mutant(
        "hint-skip-ignores-the-content-version",
        GATES,
        "        if current and trust_hint and record is not None and record.source_version == item.version:",
        "        if record is not None and record.state == ACTIVE and trust_hint and record.source_version == item.version:",
        (
            f"{SKIP_RULE}::test_decide",
            "tests/core/test_versions.py::test_a_parser_version_change_rereads_every_source_object[sqlite]",
        ),
    ),
    Mutant(
        "checksum-skip-ignores-the-content-version",
        GATES,
        "    if current and record is not None and record.checksum == checksum:",
        "    if record is not None and record.state == ACTIVE and record.checksum == checksum:",
        (f"{SKIP_RULE}::test_decide",),
    ),
    Mutant(
        "stale-owner-commits-after-a-takeover",
        "src/headwater/manifest/leases.py",
        "        raise _lost(lease)\n",
        "        return\n",
        (
            "tests/core/test_leases.py::test_a_takeover_fences_every_commit_of_the_stale_owner[sqlite]",
        ),
    ),
    Mutant(
        "a-model-error-on-one-document-ends-the-drain",
        INDEXER,
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
        "src/headwater/workspace_reads.py",
        "            admitted=self.manifest.visible_to,\n",
        "",
        (
            "tests/search/test_manifest_gate.py::test_a_revoked_document_is_not_returned_before_the_index_applies_it[keyword]",
        ),
    ),
    Mutant(
        "rebuild-switch-skips-its-re-verification",
        "src/headwater/rebuilds/orchestrate.py",
        "    report = build(ws, ready)\n    problems = verify(ws, ready, report)\n",
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
        "src/headwater/workspace_indexes.py",
        "                sink.close()\n                raise self._owned_elsewhere(generation, bound)\n",
        "                sink.bind(mine, empty=True)\n",
        (
            "tests/correctness/test_index_identity.py::test_a_wrong_manifest_url_is_refused_and_leaves_the_index_intact[sqlite]",
        ),
    ),
    Mutant(
        "the-storage-of-another-manifests-index-is-dropped",
        "src/headwater/workspace_indexes.py",
        "            raise self._owned_elsewhere(generation, str(bound))\n        sink.drop()",
        "        sink.drop()",
        (
            "tests/correctness/test_index_identity.py::test_storage_of_an_index_bound_to_another_manifest_is_never_dropped[sqlite]",
        ),
    ),
]


def _copy_tree(workdir: Path) -> None:
    for part in ("src", "tests"):
        shutil.copytree(
            ROOT / part, workdir / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    shutil.copy2(ROOT / "pyproject.toml", workdir / "pyproject.toml")


def _apply(workdir: Path, mutant: Mutant) -> str | None:
    """Apply the patch; return a problem, or None when it applied."""
    target = workdir / mutant.file
    if not target.exists():
        return f"{mutant.file} does not exist"
    text = target.read_text(encoding="utf-8")
    found = text.count(mutant.old)
    if found != 1:
        return f"its old text occurs {found} times in {mutant.file}; expected exactly once"
    target.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
    return None


def run_mutant(mutant: Mutant, python: str, timeout: int) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.name}-") as tmp:
        workdir = Path(tmp)
        _copy_tree(workdir)
        problem = _apply(workdir, mutant)
        if problem is not None:
            return "stale-patch", problem
        env = {**os.environ, "PYTHONPATH": str(workdir / "src"), "HF_HUB_OFFLINE": "1"}
        env.pop("HEADWATER_FAILPOINTS", None)
        command = [python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
        command += [f"{n}" for n in mutant.killers]
        try:
            done = subprocess.run(
                command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return "killed", "timed out"
        last = (done.stdout.strip().splitlines() or [""])[-1]
        if done.returncode == 0:
            return "survived", last
        if done.returncode != 1 or " failed" not in last:  # a collection error, no tests…
            return "broken", f"pytest exit {done.returncode}: {last}"
        return "killed", last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only mutants whose name contains this")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per mutant")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if args.k in m.name]
    if not chosen:
        print(f"no mutant name contains {args.k!r}; names: {', '.join(m.name for m in MUTANTS)}")
        return 1
    bad = 0
    for mutant in chosen:
        verdict, detail = run_mutant(mutant, sys.executable, args.timeout)
        print(f"{verdict:12} {mutant.name}: {detail}", flush=True)
        bad += verdict != "killed"
    print(f"{len(chosen) - bad}/{len(chosen)} killed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
