"""What a real sync makes of the first 2,000 files of /usr/share/doc: content, metadata-only,
excluded, failed.

Copies the first N regular files under a root (the sorted walk of ``bench/formats.py``,
symbolic links skipped) into a scratch folder, syncs it as a filesystem source of a
fresh workspace (SQLite manifest and index, the fake embedder: the shares do not depend
on the model) and sorts every file by what the manifest says of it:

- ``content``: an active document with its text;
- ``metadata_only``: an active document flagged ``content = "unavailable"``;
- ``excluded``: not selected by the source's ``exclude`` (``--exclude``) or dropped by
  a hook;
- ``failed``: a failure record and no document, or a document no index holds (an
  ``embed`` failure, or a ``chunk`` failure of a source without metadata-only
  documents); a document over ``max_document_chars`` is indexed by its metadata and
  counts as ``metadata_only``.

    HF_HUB_OFFLINE=1 PYTHONPATH=src .venv/bin/python bench/share_doc_sync.py \
        --files 2000 --json bench/out/share-doc-sync.json [--ocr] [--exclude '**/*.gif']
        [--text .b]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from formats import first_files, kind_of


def measure(
    root: Path, count: int, ocr: bool, exclude: list[str], text: list[str]
) -> dict[str, object]:
    from headwater import Workspace

    work = Path(tempfile.mkdtemp(prefix="hw-share-doc-"))
    corpus = work / "corpus"
    files = first_files(root, count)
    for path in files:
        target = corpus / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    names = {str(p.relative_to(root)) for p in files}
    parse = f"[parse]\nocr = {json.dumps(ocr)}\ntext_extensions = {json.dumps(text)}\n"
    (work / "headwater.toml").write_text(
        '[workspace]\ntenant = "bench"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f"{parse}"
        f'[[source]]\nid = "doc"\ntype = "filesystem"\nroot = "{corpus}"\n'
        f"access = {{ public = true }}\nexclude = {json.dumps(exclude)}\n"
    )
    started = time.perf_counter()
    with Workspace.open(work / "headwater.toml") as ws:
        ws.sync()
        seconds = time.perf_counter() - started
        outcome: dict[str, str] = {}
        classes: Counter[str] = Counter()
        for name in sorted(names):
            report = (
                ws.document(source="doc", object_id=name).as_dict() if _held(ws, name) else None
            )
            if report is not None and report["state"] == "active":
                outcome[name] = "metadata_only" if report["content"] == "unavailable" else "content"
        failures = {f.object_id: f for f in ws.failures()}
        for name in names - outcome.keys():
            failure = failures.get(name)
            if failure is None or failure.error_class == "excluded":
                outcome[name] = "excluded"
            else:
                outcome[name] = "failed"
        for name, failure in failures.items():
            indexing = failure.stage in ("chunk", "embed") or failure.stage.startswith("index:")
            if name in names and indexing:
                chunks = ws.document(source="doc", object_id=name).as_dict()["indexes"]
                stood_in = failure.stage == "chunk" and chunks["main"]["chunks"] > 0
                # indexed by its metadata (its chunking failed), or held by no index
                outcome[name] = "metadata_only" if stood_in else "failed"
            if name in names:
                classes[f"{failure.error_class} {kind_of(name)} ({outcome[name]})"] += 1
    shutil.rmtree(work, ignore_errors=True)
    shares = Counter(outcome.values())
    return {
        "files": len(names),
        "bytes": sum(p.stat().st_size for p in files),
        "sync_seconds": round(seconds, 1),
        "shares": {k: shares.get(k, 0) for k in ("content", "metadata_only", "excluded", "failed")},
        "failure_classes": dict(classes.most_common()),
    }


def _held(ws: object, name: str) -> bool:
    from headwater.errors import NotFoundError

    try:
        ws.document(source="doc", object_id=name)  # type: ignore[attr-defined]
    except NotFoundError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--ocr", action="store_true", help="[parse] ocr = true")
    parser.add_argument("--exclude", action="append", default=[], help="a glob to exclude")
    parser.add_argument(
        "--text", action="append", default=[], help="an extension for [parse] text_extensions"
    )
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    result = measure(args.root, args.files, args.ocr, args.exclude, args.text)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    sys.exit(0)


if __name__ == "__main__":
    main()
