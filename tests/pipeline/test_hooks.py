"""Ingestion hooks: the contract, the built-in ``redact``, and hooks in a real sync.

Third-party hooks are installed for real: a distribution (a module and its
``*.dist-info`` with ``entry_points.txt``) is written to a folder put on ``sys.path``,
so ``importlib.metadata`` finds their entry points in the ``headwater.hooks`` group as
it would after ``pip install``. A real workspace then syncs files through them: a hook
edits, drops or fails documents, and changing a hook re-indexes from stored content
without reading a file again.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest

from headwater import Workspace, plugins
from headwater.errors import ConfigError
from headwater.pipeline.hooks import HookDocument, join_sections, load_hooks, split_sections
from headwater.pipeline.hooks.redact import Redact, iban_valid, luhn_valid
from workspace_helpers import filesystem_source, write_config

HOOKS_MODULE = '''
from headwater.pipeline.hooks import Drop


class Stamp:
    """Adds a section and a metadata key; its version is an option."""

    def __init__(self, *, version="1", text="Stamped by the hook."):
        self.version = version
        self.text = text

    def __call__(self, document):
        metadata = {**document.metadata, "stamped": self.version}
        return document.evolve(sections=[*document.sections, self.text], metadata=metadata)


class DropSecret:
    version = "1"

    def __call__(self, document):
        if "CONFIDENTIAL" in document.text:
            return Drop("marked CONFIDENTIAL")
        return document


class Explode:
    version = "1"

    def __call__(self, document):
        if "BOOM" in document.text:
            raise RuntimeError("cannot handle BOOM")
        return document
'''


@pytest.fixture
def installed_hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "hw_test_hooks-1.0.dist-info").mkdir(parents=True)
    (site / "hw_test_hooks.py").write_text(HOOKS_MODULE)
    info = site / "hw_test_hooks-1.0.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hw-test-hooks\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[headwater.hooks]\nstamp = hw_test_hooks:Stamp\n"
        "drop_secret = hw_test_hooks:DropSecret\nexplode = hw_test_hooks:Explode\n"
    )
    monkeypatch.syspath_prepend(str(site))
    plugins._installed.cache_clear()
    yield
    plugins._installed.cache_clear()


def test_sections_split_before_headings_outside_fences_and_join_back() -> None:
    text = "Intro line.\n\n# One\n\nBody\n\n```\n# not a heading\n```\n\n## Two\n\nMore"
    sections = split_sections(text)
    assert sections == (
        "Intro line.",
        "# One\n\nBody\n\n```\n# not a heading\n```",
        "## Two\n\nMore",
    )
    assert join_sections(sections) == text


def test_redact_validates_before_it_replaces_and_counts_per_kind() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert iban_valid("DE89 3704 0044 0532 0130 00") and not iban_valid("DE89370400440532013001")
    hook = Redact(patterns={"employee": r"EMP-\d{6}"}, placeholder="<{kind}>")
    document = HookDocument(
        document_id="d",
        source="s",
        object_id="o",
        title="Call jane@example.org",
        sections=(
            "# Pay\n\nCard 4111 1111 1111 1111, not 4111 1111 1111 1112.",
            "IBAN DE89 3704 0044 0532 0130 00 for EMP-123456; phone +49 30 1234567.",
            "Shipped 2024-10-01, version 1.2.3.",
        ),
        metadata={"from": "Jane <jane@example.org>", "path": "pay.md"},
    )
    out = hook(document)
    assert isinstance(out, HookDocument)
    assert out.title == "Call <email>"
    assert "Card <card>, not 4111 1111 1111 1112." in out.text
    assert "IBAN <iban> for <employee>; phone <phone>." in out.text
    assert "Shipped 2024-10-01, version 1.2.3." in out.text
    assert out.metadata["from"] == "Jane <<email>>"
    assert out.metadata["redactions"] == "card: 1, email: 2, employee: 1, iban: 1, phone: 1"
    assert hook.redact("nothing here", Counter()) == "nothing here"
    with pytest.raises(ValueError):
        Redact(kinds=["ssn"])


def test_unknown_hooks_and_refused_options_are_config_errors() -> None:
    chain = load_hooks([("redact", {"kinds": ["email"]})])
    assert chain.describe() == [["redact", "redact-1", {"kinds": ["email"]}]]
    with pytest.raises(ConfigError) as unknown:
        load_hooks([("redactt", {})])
    assert "'redactt'" in str(unknown.value) and "redact" in str(unknown.value)
    with pytest.raises(ConfigError) as refused:
        load_hooks([("redact", {"colour": "red"})])
    assert "#1 ('redact')" in str(refused.value) and "colour" in str(refused.value)


def hooks_config(*entries: str) -> str:
    return "".join(f"[[hooks]]\n{textwrap.dedent(e).strip()}\n" for e in entries)


def test_hooks_edit_drop_and_fail_documents_in_a_sync(
    tmp_path: Path, manifest_url: str, installed_hooks: None
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "contacts.md").write_text(
        "# Contacts\n\nWrite to grace.hopper@example.org about the compiler.\n"
    )
    (corpus / "secret.md").write_text("# Plan\n\nCONFIDENTIAL merger walrus plan.\n")
    (corpus / "bomb.md").write_text("# Bomb\n\nBOOM goes the narwhal.\n")
    sources = filesystem_source(corpus, access="{ public = true }")

    def configure(stamp_version: str) -> Path:
        extra = hooks_config(
            'name = "redact"\nkinds = ["email"]',
            'name = "drop_secret"',
            'name = "explode"',
            f'name = "stamp"\nversion = "{stamp_version}"',
        )
        return write_config(tmp_path, manifest_url=manifest_url, sources=sources, extra=extra)

    with Workspace.open(configure("1")) as ws:
        result = ws.sync()
        (hit,) = ws.search("compiler", mode="keyword", k=3)
        assert "[REDACTED:email]" in hit["chunk"] and "grace.hopper" not in hit["chunk"]
        assert ws.search("grace hopper example", mode="keyword", k=3) == []
        assert ws.search("stamped hook", mode="keyword", k=3)  # the added section
        assert ws.search("walrus merger", mode="keyword", k=3) == []  # dropped
        failures = {f.object_id: f for f in ws.failures()}
        assert set(failures) == {"secret.md", "bomb.md"}
        secret, bomb = failures["secret.md"], failures["bomb.md"]
        assert (secret.stage, secret.error_class) == ("hook", "excluded")
        assert "'drop_secret'" in secret.message and "CONFIDENTIAL" in secret.message
        assert (bomb.stage, bomb.error_class) == ("hook", "hook_error")
        assert "'explode'" in bomb.message and "cannot handle BOOM" in bomb.message
        assert result.index.replaced == 2  # contacts.md, and secret.md with no chunks
    (corpus / "secret.md").write_text("# Plan\n\nThe walrus plan is public now.\n")
    with Workspace.open(configure("1")) as ws:
        ws.sync()
        assert ws.search("walrus plan", mode="keyword", k=3)  # no longer dropped
        assert {f.object_id for f in ws.failures()} == {"bomb.md"}
        before = {h["chunk_id"] for h in ws.search("stamped hook", mode="keyword", k=5)}
    with Workspace.open(configure("2")) as ws:  # a new hook version: re-chunk stored text
        run = ws.sync()
        assert run.runs[0].fetched == 0  # no file was read again
        assert run.index.replaced == 2
        after = {h["chunk_id"] for h in ws.search("stamped hook", mode="keyword", k=5)}
        assert after and after.isdisjoint(before)
