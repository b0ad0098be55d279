"""Hooks per source, through the CLI: ``[[source.hooks]]`` and ``workspace_hooks``.

Two filesystem sources hold the same kind of text (an e-mail address and a phone
number). The workspace's ``[[hooks]]`` redact phone numbers; source ``hr`` adds its own
``redact`` of e-mail addresses after them, source ``eng`` runs none
(``workspace_hooks = false``). ``headwater sync`` and ``headwater search --json`` are
run as a user would; changing ``hr``'s hooks re-indexes from stored content without
reading a file, and an unknown hook is a configuration error naming the source.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from workspace_helpers import write_config

CLI = [sys.executable, "-m", "headwater.cli"]
TEXT = "# Contacts\n\nWrite to grace.hopper@example.org or call +49 30 1234567 about the {}.\n"


def run(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "-c", str(config), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )


def search(config: Path, query: str, source: str) -> list[dict[str, Any]]:
    done = run(config, "search", query, "--mode", "keyword", "--source", source, "--json")
    assert done.returncode == 0, done.stderr
    results: list[dict[str, Any]] = json.loads(done.stdout)["results"]
    return results


def configure(tmp_path: Path, hr_hooks: str) -> Path:
    sources = ""
    for name, extra in (("hr", hr_hooks), ("eng", "workspace_hooks = false\n")):
        corpus = tmp_path / name
        corpus.mkdir(exist_ok=True)
        if not (corpus / "contacts.md").exists():  # written once: its mtime stays
            (corpus / "contacts.md").write_text(TEXT.format(f"{name} compiler"))
        sources += (
            f'[[source]]\nid = "{name}"\ntype = "filesystem"\nroot = "{corpus}"\n'
            f"access = {{ public = true }}\n{extra}"
        )
    workspace_hooks = '[[hooks]]\nname = "redact"\nkinds = ["phone"]\n'
    return write_config(tmp_path, manifest_url=None, sources=sources, extra=workspace_hooks)


def test_a_source_runs_its_own_hooks_after_or_instead_of_the_workspaces(tmp_path: Path) -> None:
    email = '[[source.hooks]]\nname = "redact"\nkinds = ["email"]\n'
    config = configure(tmp_path, email)
    done = run(config, "sync", "--json")
    assert done.returncode == 0, done.stderr
    (hr,) = search(config, "hr compiler", "hr")
    assert "[REDACTED:email]" in hr["chunk"] and "[REDACTED:phone]" in hr["chunk"]
    assert "grace.hopper" not in hr["chunk"]
    (eng,) = search(config, "eng compiler", "eng")
    assert "grace.hopper@example.org" in eng["chunk"] and "+49 30 1234567" in eng["chunk"]
    # a new placeholder for hr: stored content is chunked again, no file is read
    config = configure(tmp_path, email + 'placeholder = "<{kind} removed>"\n')
    done = run(config, "sync", "--json")
    assert done.returncode == 0, done.stderr
    assert [r["fetched"] for r in json.loads(done.stdout)["runs"]] == [0, 0]
    (hr,) = search(config, "hr compiler", "hr")
    assert "<email removed>" in hr["chunk"] and "[REDACTED:phone]" in hr["chunk"]
    (eng,) = search(config, "eng compiler", "eng")
    assert "grace.hopper@example.org" in eng["chunk"]


def test_an_unknown_source_hook_is_a_configuration_error_naming_the_source(
    tmp_path: Path,
) -> None:
    config = configure(tmp_path, '[[source.hooks]]\nname = "redactt"\n')
    done = run(config, "sync")
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "[[source.hooks]] of source 'hr' #1" in done.stderr
    assert "'redactt'" in done.stderr and "redact" in done.stderr
