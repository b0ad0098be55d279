"""Docs enforced by tests, and the public surface kept small and deliberate."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

import headwater
from headwater import Workspace
from headwater.cli import commands, dlq, ops  # noqa: F401  (registers every command)
from headwater.cli.app import app
from workspace_helpers import filesystem_source, write_config

DOCS = Path(__file__).resolve().parents[2] / "docs"
README = DOCS.parent / "README.md"


def command_paths() -> list[tuple[str, object]]:
    group = typer.main.get_command(app)
    found = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        sub = getattr(command, "commands", None)
        if sub:
            found.extend((f"{name} {child}", cmd) for child, cmd in sub.items())
        else:
            found.append((name, command))
    return found


def test_every_command_has_help_and_a_docs_entry() -> None:
    cli_doc = (DOCS / "cli.md").read_text()
    readme = README.read_text()
    paths = command_paths()
    assert len(paths) >= 14
    for path, command in paths:
        assert getattr(command, "help", None), f"`headwater {path}` has no help text"
        assert f"## `headwater {path}" in cli_doc, f"docs/cli.md lacks `headwater {path}`"
        top = path.split()[0]
        assert f"headwater {top}" in readme, f"README.md never mentions `headwater {top}`"


def test_every_connector_has_a_docs_page() -> None:
    from headwater.connectors import available_connector_types

    index = (DOCS / "connectors.md").read_text()
    for name in available_connector_types():  # the README promises one page per connector
        page = DOCS / "connectors" / f"{name}.md"
        assert page.exists(), f"missing {page}"
        assert "[[source]]" in page.read_text(), f"{page} shows no [[source]] example"
        assert f"| `{name}` | [connectors/{name}.md](connectors/{name}.md)" in index, name


def test_readme_gives_exactly_the_two_setup_commands() -> None:
    text = README.read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text.split("## Use")[0], re.S)
    assert [b.strip() for b in blocks] == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    ci = (README.parent / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci


def test_public_surface_is_exactly_all() -> None:
    exported = {name for name in dir(headwater) if not name.startswith("_")}
    modules = {name for name in exported if type(getattr(headwater, name)).__name__ == "module"}
    assert exported - modules == set(headwater.__all__) - {"__version__"}
    for name in headwater.__all__:
        assert getattr(headwater, name) is not None
    typed_results = {"StatusReport", "DocumentReport", "SearchResult", "SyncResult"}
    assert typed_results | {"ReconcileReport", "RedriveReport", "RemovalReport"} <= set(
        headwater.__all__
    )


def test_ctrl_c_cancels_after_the_current_batch(tmp_path: Path, corpus: Path) -> None:
    for n in range(10):
        (corpus / f"more-{n}.txt").write_text(f"more {n}\n")
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(corpus, extra="batch_size = 2")
    )
    with Workspace.open(config) as ws:
        batches = []

        def progress(source: str, counts: object) -> None:
            batches.append(source)
            ws.cancel.set()  # as the CLI's SIGINT handler does

        result = ws.sync(index=False, progress=progress)
        run = result.runs[0]
        assert run.status == "cancelled"
        assert 0 < ws.manifest.count_documents("docs") < 15
        ws.cancel.clear()
        again = ws.sync(index=False).runs[0]
        assert again.status == "succeeded" and again.window_start == run.window_start
        assert ws.manifest.count_documents("docs") == 15
        assert again.counts.new == 15 - again.counts.unchanged
