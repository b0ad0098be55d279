"""Human output prints readable lines, never a Python dict or list repr (issue 28).

``index``, ``doc show``, ``runs show`` and ``dlq show`` print one ``key: value`` line per
field of their JSON report, nested objects indented under their key; ``index`` and
``sync`` say what indexing did in one sentence.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from headwater.cli.app import app, register_commands
from headwater.cli.lines import field_lines
from workspace_helpers import filesystem_source, write_config

REPR = re.compile(r"\{'|\['|\(\)|\bNone\b|\bTrue\b|\bFalse\b")


def cli(config: Path, *args: str) -> Any:
    register_commands()
    result = CliRunner().invoke(app, ["--config", str(config), *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.stdout


def readable(text: str) -> str:
    assert text.strip()
    assert not REPR.search(text), text
    return text


def test_index_doc_show_and_runs_show_print_lines_not_dicts(tmp_path: Path, corpus: Path) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    readable(cli(config, "sync"))
    (corpus / "guides" / "expenses.md").write_text("# Expenses\n\nMeals: 70 euros per day.\n")
    cli(config, "sync", "--no-index", "--json")

    indexed = readable(cli(config, "index"))
    assert re.search(
        r"indexed: 1 replaced, 0 deleted, 0 ACL updates, 0 failed; \d+ chunks", indexed
    )

    doc = readable(cli(config, "doc", "show", "--source", "docs", "--object", "guides/expenses.md"))
    lines = doc.splitlines()
    assert "source: docs" in lines and "revision: 2" in lines
    assert "access:" in lines and "  groups: staff" in lines and "  users: (none)" in lines
    assert "  public: no" in lines and "indexes:" in lines
    assert "  main:" in lines and "    applied_revision: 2" in lines
    assert "content_reason: -" in lines

    run_id = cli(config, "runs", "--json")["runs"][0]["run_id"]
    run = readable(cli(config, "runs", "show", run_id)).splitlines()
    assert f"run_id: {run_id}" in run and "status: succeeded" in run
    assert "window:" in run and "counts:" in run and "  changed: 1" in run
    assert "resumed: no" in run and "owner: -" in run


def test_field_lines_nest_lists_of_objects_and_escape_controls() -> None:
    lines = field_lines(
        {
            "items": [{"index": "main", "pending": 3}, {"index": "wiki", "pending": 0}],
            "tags": ["a", "b"],
            "empty": {},
            "title": "bad\x1b[31m",
        }
    )
    assert lines == [
        "items:",
        "  - index: main",
        "    pending: 3",
        "  - index: wiki",
        "    pending: 0",
        "tags: a, b",
        "empty: (none)",
        "title: bad\\x1b[31m",
    ]
