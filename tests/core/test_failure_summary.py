"""`headwater failures --summary`: open failures grouped by cause, each with its fix.

The grouping runs on both manifest engines over records the ledger really holds; the
fix rule is a pure function tested on a table of cases; and end to end, each fix line
the CLI prints is pasted into the config and the next sync no longer fails that way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import insert

from headwater import Workspace
from headwater.clock import utcnow
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.failure_groups import FailureGroup, GroupKey, extension_of
from headwater.manifest.failures import DEAD
from headwater.manifest.records import FailureWrite
from headwater.sync.fixes import SourceFacts, fix_for
from workspace_helpers import filesystem_source, write_config


def write(source: str, obj: str, stage: str, cls: str, permanent: bool = True) -> FailureWrite:
    return FailureWrite(
        source_id=source,
        object_id=obj,
        document_id=hashlib.sha256(f"{source}/{obj}".encode()).hexdigest(),
        locator=f"/srv/{obj}",
        stage=stage,
        error_class=cls,
        message=f"{obj}: {cls}",
        pipeline_version="p1",
        source_version="v1",
        fetch_ref=None,
        permanent=permanent,
    )


@pytest.mark.parametrize(
    ("object_id", "extension"),
    [
        ("guides/intro.rst", ".rst"),
        ("UPPER.RST", ".rst"),
        ("NEWS.rst.gz", ".rst.gz"),
        ("changelog.gz", ".gz"),
        ("archive.zip!/docs/site.Conf", ".conf"),
        ("https://example.test/a/page.PHP?x=1#top", ".php"),
        (".gitignore", ""),
        ("README", ""),
        ("notes.2024 draft", ""),
        ("dir.d/file", ""),
    ],
)
def test_extension_is_the_one_a_parser_sees(object_id: str, extension: str) -> None:
    assert extension_of(object_id) == extension


def test_open_failures_group_by_source_stage_class_and_extension(
    tmp_path: Path, corpus: Path, manifest_url: str
) -> None:
    write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    with Workspace.open(tmp_path) as ws:
        ledger = ws.manifest.failures
        rows = [
            write("docs", f"doc/page-{n:02d}.rst", "parse", "unsupported_type") for n in range(51)
        ]
        rows += [write("docs", name, "parse", "unsupported_type") for name in ("a.gif", "B.GIF")]
        rows += [write("docs", f"big-{n}.bin", "fetch", "too_large") for n in range(2)]
        rows += [write("docs", "acl.md", "fetch", "invalid_principal")]
        rows += [write("docs", "x.md", "fetch", "transient", permanent=False)]
        rows += [write("docs", "gone.md", "embed", "WeirdError")]
        rows += [write("wiki", f"w{n}.rst", "parse", "unsupported_type") for n in range(2)]
        rows += [write("docs", "fixed.rst", "parse", "unsupported_type")]
        ledger.record(rows)
        ledger.resolve([rows[-1].document_id], ["parse"])  # resolved: not counted

        groups = {(g.key.source_id, g.key.stage, g.key.label()): g for g in ledger.summary()}
        assert [(k, g.count) for k, g in groups.items()] == [
            (("docs", "parse", "unsupported_type .rst"), 51),
            (("docs", "fetch", "too_large"), 2),
            (("docs", "parse", "unsupported_type .gif"), 2),
            (("wiki", "parse", "unsupported_type .rst"), 2),
            (("docs", "embed", "WeirdError"), 1),
            (("docs", "fetch", "invalid_principal"), 1),
            (("docs", "fetch", "transient"), 1),
        ]
        rst = groups[("docs", "parse", "unsupported_type .rst")]
        assert rst.examples == ("doc/page-00.rst", "doc/page-01.rst", "doc/page-02.rst")
        assert rst.dead == 51 and rst.message == "doc/page-00.rst: unsupported_type"
        assert groups[("docs", "parse", "unsupported_type .gif")].spellings == (".gif", ".GIF")
        assert groups[("docs", "fetch", "too_large")].key.extension is None
        assert groups[("docs", "fetch", "transient")].dead == 0  # retrying
        assert [g.count for g in ledger.summary("wiki")] == [2]

        # A group's entries, for its bulk actions: all of them, or the dead ones.
        gif = GroupKey("docs", "parse", "unsupported_type", ".gif")
        entries = ledger.group_entries(gif)
        assert sorted(ledger.get(n).object_id for n in entries) == ["B.GIF", "a.gif"]  # type: ignore[union-attr]
        transient = GroupKey("docs", "fetch", "transient")
        assert len(ledger.group_entries(transient)) == 1
        assert ledger.group_entries(transient, (DEAD,)) == []

        summary = ws.failure_summary().as_dict()
        assert summary["total"] == 60 and len(summary["groups"]) == 7
        first = summary["groups"][0]
        assert first["fix"]["line"] == '[parse] text_extensions = [".rst"]'
        assert set(first) == {
            "source", "stage", "error_class", "extension", "label", "count", "dead",
            "retrying", "examples", "fix",
        }  # fmt: skip


def test_a_summary_of_many_failures_keeps_three_examples_per_group(
    tmp_path: Path, corpus: Path
) -> None:
    write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(tmp_path) as ws:
        now = utcnow()
        rows = []
        for n in range(20_000):
            w = write("docs", f"f{n:05d}.{'rst' if n % 2 else 'tex'}", "parse", "unsupported_type")
            rows.append(
                {**{k: v for k, v in vars(w).items()}, "permanent": 1, "attempts": 1,
                 "status": DEAD, "priority": 0, "first_failed_at": now, "last_failed_at": now}
            )  # fmt: skip
        with begin_write(ws.manifest.engine) as conn:  # one bulk insert: 20k records fast
            conn.execute(insert(t.failures), rows)
        groups = ws.manifest.failures.summary()
    assert [(g.key.extension, g.count, g.dead, g.examples[0]) for g in groups] == [
        (".rst", 10_000, 10_000, "f00001.rst"),
        (".tex", 10_000, 10_000, "f00000.tex"),
    ]
    assert all(len(g.examples) == 3 for g in groups)


def group(
    cls: str,
    stage: str = "parse",
    extension: str | None = None,
    examples: tuple[str, ...] = ("a",),
    message: str = "",
    spellings: tuple[str, ...] = (),
) -> FailureGroup:
    return FailureGroup(GroupKey("docs", stage, cls, extension), 5, 5, examples, spellings, message)


FS = SourceFacts(type="filesystem", excludable=True, limits={"max_file_bytes": 1000})
PUSH = SourceFacts(type="push")


@pytest.mark.parametrize(
    ("failures", "facts", "kind", "line"),
    [
        (group("unsupported_type", extension=".conf"), FS, "text_extensions",
         '[parse] text_extensions = [".conf"]'),
        (group("unsupported_type", extension=".rst.gz"), FS, "text_extensions",
         '[parse] text_extensions = [".rst"]'),
        (group("unsupported_type", extension=".gif", spellings=(".gif", ".GIF")), FS,
         "exclude", 'exclude = ["**/*.gif", "**/*.GIF"]'),
        (group("unsupported_type", extension=".dat", message="'x.dat' is binary, not plain"),
         FS, "exclude", 'exclude = ["**/*.dat"]'),
        (group("unsupported_type", extension="", examples=("a/.gitignore", ".npmrc")), FS,
         "exclude", 'exclude = ["**/.gitignore", "**/.npmrc"]'),
        (group("unsupported_type", extension=".gif"), PUSH, "inspect",
         "headwater failures --source docs"),
        (group("too_large", stage="fetch"), FS, "limit", "max_file_bytes = 2000"),
        (group("too_large", stage="fetch", message="is 9 bytes; max_page_bytes is 1"),
         SourceFacts(type="web"), "limit", "max_page_bytes = <larger>"),
        (group("too_large", stage="chunk"), FS, "limit",
         "[chunker] max_document_chars = 10000000"),
        (group("too_large", extension=".zip"), FS, "exclude", 'exclude = ["**/*.zip"]'),
        (group("invalid_principal", stage="fetch"), FS, "source_acl",
         "fix the ACL at the source"),
        (group("parse_error", extension=".pdf"), FS, "exclude", 'exclude = ["**/*.pdf"]'),
        (group("empty_document", extension=".txt"), FS, "exclude", 'exclude = ["**/*.txt"]'),
        (group("transient", stage="fetch"), FS, "retry", "headwater sync docs"),
        (group("WeirdError", stage="embed"), FS, "inspect", "headwater failures --source docs"),
        (group("unsupported_type", extension=".conf"), SourceFacts(type=None),
         "remove_source", "headwater source remove docs"),
    ],
)  # fmt: skip
def test_each_cause_gets_the_line_that_fixes_or_silences_it(
    failures: FailureGroup, facts: SourceFacts, kind: str, line: str
) -> None:
    fix = fix_for(failures, facts)
    assert (fix.kind, fix.line) == (kind, line)
    assert fix.detail and fix.where


HEADWATER = [sys.executable, "-m", "headwater.cli"]


def cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [*HEADWATER, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_cli_summary_prints_groups_and_each_fix_line_fixes_its_group(
    tmp_path: Path, corpus: Path
) -> None:
    for n in range(4):
        (corpus / "etc" / f"site-{n}.nginx").parent.mkdir(exist_ok=True)
        # Latin-1, not UTF-8: its bytes do not say text, so the extension must
        (corpus / "etc" / f"site-{n}.nginx").write_bytes(
            f"server_name host{n}.acme.test; # Müller\n".encode("latin-1")
        )
    for n in range(2):
        (corpus / f"logo-{n}.gif").write_bytes(b"GIF89a\x01\x00\x01\x00\x80\x00\x00" + bytes(40))
    (corpus / "huge.txt").write_text("word " * 400)  # 2000 bytes
    write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus, extra="max_file_bytes = 1500"),
    )
    assert cli(["sync", "--no-index"], tmp_path).returncode == 0

    human = cli(["failures", "--summary"], tmp_path)
    assert human.returncode == 0, human.stderr
    assert "7 open failures in 3 groups" in human.stdout
    assert "docs  parse  unsupported_type .nginx: 4 (4 dead)" in human.stdout
    assert "e.g. etc/site-0.nginx, etc/site-1.nginx, etc/site-2.nginx\n" in human.stdout
    assert 'fix: [parse] text_extensions = [".nginx"]' in human.stdout
    assert 'fix: exclude = ["**/*.gif"]' in human.stdout
    assert "docs  fetch  too_large: 1 (1 dead)" in human.stdout
    # Without --summary the command is as before: one line per record.
    plain = cli(["failures"], tmp_path).stdout
    assert len(re.findall(r"^#\d+ \[dead\] docs/", plain, re.M)) == 7

    data = json.loads(cli(["failures", "--summary", "--json"], tmp_path).stdout)
    assert data["total"] == 7
    fixes = {g["label"]: g["fix"] for g in data["groups"]}
    assert set(fixes) == {"unsupported_type .nginx", "unsupported_type .gif", "too_large"}
    assert fixes["too_large"] == {
        "kind": "limit",
        "line": "max_file_bytes = 3000",
        "where": '[[source]] id = "docs"',
        "detail": fixes["too_large"]["detail"],
    }
    nginx = next(g for g in data["groups"] if g["extension"] == ".nginx")
    assert (nginx["count"], nginx["dead"], nginx["retrying"]) == (4, 4, 0)
    assert nginx["examples"] == ["etc/site-0.nginx", "etc/site-1.nginx", "etc/site-2.nginx"]

    # Each printed line, pasted where it says, fixes its group on the next sync.
    source_lines = f"{fixes['unsupported_type .gif']['line']}\n{fixes['too_large']['line']}"
    parse_line = fixes["unsupported_type .nginx"]["line"].replace("[parse] ", "[parse]\n")
    write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus, extra=source_lines),
        extra=parse_line + "\n",
    )
    assert cli(["sync", "--no-index"], tmp_path).returncode == 0
    after = cli(["failures", "--summary", "--json"], tmp_path)
    assert json.loads(after.stdout) == {"total": 0, "groups": []}, after.stdout
    assert cli(["failures", "--summary"], tmp_path).stdout.strip() == "no open failures"
    typo = cli(["failures", "--summary", "--source", "dcos"], tmp_path)
    assert typo.returncode == 2 and "'dcos' is neither configured" in typo.stderr
