"""Sync rules (``[[source.rules]]``): the decision table, validation at load, a sync that
narrows its scope (deletes as ``excluded_by_config``, never blocked by the prune fraction)
and ``headwater rules test`` through the CLI (a live listing, nothing written)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from headwater import Workspace
from headwater.cli.app import register_commands
from headwater.config import load_config
from headwater.errors import ConfigError
from headwater.manifest import schema as t
from headwater.sync.rules import RuleSet
from headwater.types import SourceDocument
from workspace_helpers import filesystem_source, write_config

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def doc(object_id: str, **fields: Any) -> SourceDocument:
    return SourceDocument(object_id=object_id, locator=object_id, version="1", **fields)


EXAMPLE = [  # the example, with a title rule in front
    {"exclude": {"title_matches": "(?i)^draft"}},
    {"exclude": {"size_over": "50MB"}},
    {"exclude": {"metadata": {"status": "draft"}, "path": "wiki/**"}},
    {"include": {"path": "wiki/**"}},
    {"exclude": {"media_type": "image/*", "modified_before": "30d"}},
]


@pytest.mark.parametrize(
    ("item", "verdict"),
    [
        (doc("wiki/a.md", title="Handbook", metadata={"status": "final"}), ("include", 3)),
        (doc("wiki/a.md", title="Handbook", metadata={"status": "draft"}), ("exclude", 2)),
        (doc("wiki/a.md", title="Handbook", metadata={"status": ["x", "draft"]}), ("exclude", 2)),
        (doc("notes/a.md", title="Handbook", metadata={"status": "draft"}), None),
        (doc("wiki/a.md", title="DRAFT plan"), ("exclude", 0)),
        (doc("x/draft-1.md", title=""), ("exclude", 0)),  # no title: the file name
        (doc("wiki/big.iso", title="ISO", size=50_000_001), ("exclude", 1)),
        (doc("wiki/big.iso", title="ISO", size=50_000_000), ("include", 3)),
        (doc("wiki/big.iso", title="ISO", content=b"x" * 10), ("include", 3)),
        (doc("s3/big", title="b", metadata={"size": "60000000"}), ("exclude", 1)),
        (
            doc("img/a.png", title="a", media_type="image/png", updated_at=NOW - timedelta(31)),
            ("exclude", 4),
        ),
        (doc("img/a.png", title="a", media_type="image/png", updated_at=NOW - timedelta(29)), None),
        (doc("img/a.png", title="a", media_type="image/png"), None),  # no date: unknown
        (
            doc("img/a.txt", title="a", media_type="text/plain", updated_at=NOW - timedelta(90)),
            None,
        ),
    ],
)
def test_the_first_matching_rule_decides(item: SourceDocument, verdict: Any) -> None:
    found = RuleSet.from_tables(EXAMPLE).decide(item, NOW)
    assert (None if found is None else (found.action, found.rule)) == verdict


def test_dates_and_sizes_in_every_accepted_form() -> None:
    rules = RuleSet.from_tables(
        [
            {"exclude": {"modified_after": "2026-05-01", "size_under": 10}},
            {"exclude": {"modified_before": datetime(2020, 1, 1, tzinfo=UTC)}},
            {"exclude": {"modified_after": "2026-05-30T12:00:00+02:00", "size_over": "1KiB"}},
        ]
    )
    assert rules.decide(doc("a", title="", size=5, updated_at=NOW), NOW).rule == 0  # type: ignore[union-attr]
    old = datetime(2019, 5, 1, tzinfo=UTC)
    assert rules.decide(doc("a", title="", size=5, updated_at=old), NOW).rule == 1  # type: ignore[union-attr]
    assert rules.decide(doc("a", title="", size=1025, updated_at=NOW), NOW).rule == 2  # type: ignore[union-attr]
    assert rules.decide(doc("a", title="", size=1024, updated_at=NOW), NOW) is None


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        (
            '[[source.rules]]\nexclude = { sise_over = "5MB" }\n',
            "rule 1 (rules[0]).exclude: unknown condition 'sise_over'",
        ),
        (
            '[[source.rules]]\ninclude = { path = "a/**" }\n[[source.rules]]\nexclude = { title_matches = "([a-z" }\n',
            "rule 2 (rules[1]).exclude.title_matches: '([a-z' is not a valid regular expression",
        ),
        (
            '[[source.rules]]\ninclude = { path = "a" }\nexclude = { path = "b" }\n',
            "rule 1 (rules[0]) has keys ['exclude', 'include']; expected exactly one",
        ),
        (
            '[[source.rules]]\nexclude = { size_over = "lots" }\n',
            "rules[0]).exclude.size_over: 'lots' is not a size",
        ),
        (
            '[[source.rules]]\nexclude = { modified_before = "last year" }\n',
            "expected a duration ago",
        ),
        ("[[source.rules]]\nexclude = {}\n", "expected a table of conditions"),
    ],
)
def test_rules_are_validated_at_load(tmp_path: Path, rules: str, message: str) -> None:
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(tmp_path / "corpus") + rules
    )
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert "source[0].rules" in str(caught.value) and message in str(caught.value)


def make_corpus(root: Path) -> None:
    for name, text in {
        "wiki/guide.md": "# Guide\n\nHow to file expenses.\n",
        "wiki/draft-plan.md": "# Plan\n\nNot final yet.\n",
        "wiki/atlas.md": "# Atlas\n\n" + "Maps of every region. " * 100,
        "other/readme.md": "# Readme\n\nSomething else.\n",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    old = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
    os.utime(root / "other/readme.md", (old, old))


RULES = """
[[source.rules]]
exclude = { size_over = "1KB" }
[[source.rules]]
exclude = { title_matches = "^draft-", path = "wiki/**" }
[[source.rules]]
include = { path = "wiki/**" }
[[source.rules]]
exclude = { modified_before = "2021-01-01" }
"""


def test_narrowing_rules_deletes_as_excluded_by_config_and_rules_test_writes_nothing(
    tmp_path: Path, manifest_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
    config.write_text(config.read_text() + RULES)

    monkeypatch.chdir(tmp_path)
    runner, app = CliRunner(), register_commands()
    with Workspace.open(config) as ws:
        runs_before = _count(ws, t.runs)
    result = runner.invoke(app, ["rules", "test", "docs", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    decided = {i["object_id"]: (i["decision"], i["rule"]) for i in report["items"]}
    assert decided == {
        "other/readme.md": ("exclude", 3),
        "wiki/atlas.md": ("exclude", 0),
        "wiki/draft-plan.md": ("exclude", 1),
        "wiki/guide.md": ("include", 2),
    }
    assert (report["listed"], report["included"], report["excluded"]) == (4, 1, 3)
    assert report["complete"] is True and report["rules"] == 4
    limited = json.loads(
        runner.invoke(app, ["rules", "test", "docs", "--limit", "2", "--json"]).output
    )
    assert limited["listed"] == 2 and limited["complete"] is False
    plain = runner.invoke(app, ["rules", "test", "docs"]).output
    assert "exclude wiki/atlas.md  (rule 1)" in plain
    assert "1 included, 3 excluded of 4 listed; 4 rules" in plain

    with Workspace.open(config) as ws:
        assert _count(ws, t.runs) == runs_before  # nothing written by the test
        assert ws.manifest.count_documents("docs") == 4
        run = ws.sync(index=False).runs[0]
        # 3 of 4 deleted (75% > 20%), yet not blocked: a deliberate change of scope
        assert run.status == "succeeded", run
        assert run.counts.deleted == 3 and run.prune_blocked is None
        with ws.manifest.engine.connect() as conn:
            query = select(t.tombstones.c.object_id, t.tombstones.c.reason)
            reasons = {str(o): str(r) for o, r in conn.execute(query)}
        assert reasons == dict.fromkeys(
            ("other/readme.md", "wiki/atlas.md", "wiki/draft-plan.md"), "excluded_by_config"
        )
        assert [d.object_id for d in _active(ws)] == ["wiki/guide.md"]
        fetched = ws.sync(index=False).runs[0].fetched
        assert fetched == 0  # excluded files are never read; the kept one is unchanged

    broken = config.read_text().replace('"^draft-"', '"(unclosed"')
    config.write_text(broken)
    failed = runner.invoke(app, ["rules", "test", "docs"])
    assert failed.exit_code != 0
    assert "source[0].rules" in failed.output and "rule 2 (rules[1])" in failed.output


def _count(ws: Workspace, table: Any) -> int:
    with ws.manifest.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def _active(ws: Workspace) -> list[Any]:
    return [d for d in ws.manifest.documents_after("", 100) if d.state == "active"]
