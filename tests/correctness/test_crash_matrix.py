"""Crash tests: SIGKILL the real ``headwater sync`` at every named failpoint.

For each failpoint, on SQLite and on PostgreSQL manifests, with two sinks (sqlite and
qdrant local mode): sync corpus v1 cleanly, change the corpus (an edit, a delete, an
addition), run ``headwater sync`` with the failpoint enabled so the process kills itself
there, run ``headwater sync`` again, and compare everything with one clean sync of the
same corpus state (synced once for the module): no lost document, no duplicate or orphan
chunk, no chunk at an old revision, no tombstoned document left in a sink.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.failpoints import ALL
from workspace_helpers import filesystem_source, write_config

FAKE = '[embedder]\ntype = "fake"\ndimension = 16\n'


def sinks(directory: Path) -> str:
    return (
        '[[index]]\nname = "lite"\ntype = "sqlite"\n\n'
        f'[[index]]\nname = "vectors"\ntype = "qdrant"\npath = "{directory / "qdrant"}"\n'
    )


def make_corpus(root: Path) -> None:
    root.mkdir(parents=True)
    for n in range(8):
        paragraphs = [f"# Note {n}"] + [
            f"Paragraph {p} of note {n} talks about subject {n * 10 + p} at some length."
            for p in range(6)
        ]
        (root / f"note-{n}.md").write_text("\n\n".join(paragraphs) + "\n")


def mutate(root: Path) -> None:
    edited = root / "note-1.md"
    edited.write_text(
        edited.read_text().replace("Paragraph 3 of note 1", "Paragraph 3 (edited) of note 1")
    )
    (root / "note-2.md").unlink()
    (root / "note-new.md").write_text("# Fresh\n\nA brand new note about fresh subjects.\n")


def headwater(directory: Path, failpoint: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("HEADWATER_FAILPOINTS", None)
    if failpoint:
        env["HEADWATER_FAILPOINTS"] = failpoint
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", "sync", "--json"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def snapshot(directory: Path) -> dict[str, object]:
    """What a user could observe: manifest documents and every sink's holdings."""
    with Workspace.open(directory) as ws:
        documents: dict[str, tuple[str, str | None]] = {}
        revisions: dict[str, int] = {}
        after = ""
        while batch := ws.manifest.documents_after(after, 500):
            after = batch[-1].document_id
            for record in batch:
                documents[record.object_id] = (
                    record.state,
                    record.checksum if record.state == "active" else None,
                )
                revisions[record.document_id] = record.revision
        held: dict[str, dict[str, int]] = {}
        for name in ("lite", "vectors"):
            sink = ws.sink(name)
            rows = list(sink.inventory())
            held[name] = {row.document_id: row.chunks for row in rows}
            for row in rows:
                assert row.revision == revisions[row.document_id], (
                    f"{name} holds {row.document_id} at revision {row.revision}, "
                    f"the manifest at {revisions[row.document_id]}"
                )
        pending = {name: info["pending"] for name, info in ws.status()["indexes"].items()}
        return {"documents": documents, "held": held, "pending": pending}


EXTRA = "batch_size = 3"


@pytest.fixture(scope="module")
def clean_reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One clean sync of the changed corpus, taken once: every crashed workspace must equal
    it (document ids, checksums and chunk counts do not depend on where the corpus lies)."""
    root = tmp_path_factory.mktemp("clean-reference")
    clean, corpus = root / "clean", root / "corpus"
    clean.mkdir()
    make_corpus(corpus)
    mutate(corpus)
    write_config(
        clean,
        manifest_url=None,
        embedder=FAKE,
        indexes=sinks(clean),
        sources=filesystem_source(corpus, extra=EXTRA),
    )
    reference = headwater(clean)
    assert reference.returncode == 0, reference.stderr
    return snapshot(clean)


@pytest.mark.slow
@pytest.mark.parametrize("failpoint", ALL)
def test_killed_sync_then_resync_equals_one_clean_sync(
    failpoint: str, tmp_path: Path, manifest_url: str, clean_reference: dict[str, object]
) -> None:
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    write_config(
        crashed,
        manifest_url=manifest_url,
        embedder=FAKE,
        indexes=sinks(crashed),
        sources=filesystem_source(corpus, extra=EXTRA),
    )
    first = headwater(crashed)
    assert first.returncode == 0, first.stderr
    mutate(corpus)

    killed = headwater(crashed, failpoint)
    assert killed.returncode == -9, f"failpoint {failpoint} was never reached: {killed.stderr}"
    again = headwater(crashed)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["runs"][0]["status"] == "succeeded"

    observed, expected = snapshot(crashed), clean_reference
    assert observed["pending"] == {"lite": 0, "vectors": 0}
    expected_docs = dict(expected["documents"])  # type: ignore[call-overload]
    observed_docs = dict(observed["documents"])  # type: ignore[call-overload]
    assert observed_docs.pop("note-2.md") == ("deleted", None)
    assert observed_docs == expected_docs
    assert observed["held"] == expected["held"]
