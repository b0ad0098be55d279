"""A search returns ``k`` results whenever ``k`` visible results match.

One result per document is picked from the top chunks of each index; a long document
can fill every one of those places with its own chunks. The service then asks deeper,
so the caller still gets the other documents they may see (and all of them when ``k``
is larger than what they may see), in every mode and with ``--chunks`` too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import Workspace
from headwater.errors import ConfigError
from headwater.pipeline.embed.fake import FakeEmbedder
from workspace_helpers import filesystem_source, write_config

SHORT = ("alpha", "beta", "gamma", "delta")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    staff = tmp_path / "staff"
    staff.mkdir()
    # One long page whose ~80 chunks all say "vacation" many times over ...
    paragraph = "Vacation vacation vacation: the vacation planning rules, part {n}. " * 12
    (staff / "long.md").write_text(
        "# Long\n\n" + "\n\n".join(paragraph.format(n=n) for n in range(150)), encoding="utf-8"
    )
    # ... and four short ones that say it once, among other words.
    for name in SHORT:
        (staff / f"{name}.md").write_text(
            f"# {name}\n\nThe {name} team keeps its vacation calendar in the shared drive.\n",
            encoding="utf-8",
        )
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    for n in range(5):
        (hidden / f"h{n}.md").write_text(f"# hidden {n}\n\nvacation secrets {n}\n")
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(staff, "staff", access='{ groups = ["staff"] }')
        + filesystem_source(hidden, "hidden", access='{ groups = ["board"] }'),
    )
    workspace = Workspace.open(config, embedder=FakeEmbedder(32))
    workspace.sync()
    return workspace


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_a_long_document_never_starves_the_other_documents(ws: Workspace, mode: str) -> None:
    with ws:
        assert ws.document(source="staff", object_id="long.md").indexes["main"]["chunks"] > 50
        found = ws.search("vacation", groups=["staff"], k=5, mode=mode)
        assert sorted(r.locator.rsplit("/", 1)[-1] for r in found) == sorted(
            ["long.md", *(f"{name}.md" for name in SHORT)]
        )
        # k above what the caller may see: every visible document, and nothing else
        wide = ws.search("vacation", groups=["staff"], k=50, mode=mode)
        assert len(wide) == 5 and {r.source for r in wide} == {"staff"}


def test_top_chunks_are_k_chunks_when_k_match(ws: Workspace) -> None:
    with ws:
        chunks = ws.document(source="staff", object_id="long.md").indexes["main"]["chunks"]
        every = chunks + len(SHORT)
        found = ws.search("vacation", groups=["staff"], k=500, mode="keyword", per_document=False)
        assert len(found) == every and {r.source for r in found} == {"staff"}


def test_an_unknown_index_is_an_error_even_with_no_source(tmp_path: Path) -> None:
    config = write_config(tmp_path, manifest_url=None, sources="")
    with (
        Workspace.open(config, embedder=FakeEmbedder(32)) as ws,
        pytest.raises(ConfigError, match="index 'nope' is not configured"),
    ):
        ws.search("vacation", groups=["staff"], index="nope")


def test_the_caller_is_shown_normalized_and_an_empty_one_is_refused(ws: Workspace) -> None:
    with ws:
        used = ws.principals_of("Kim@X.com", ["staff"])
        assert used.as_dict()["user"] == "kim@x.com"
        assert "user:kim@x.com" in used.principals
        with pytest.raises(ConfigError, match="empty"):
            ws.principals_of("", [])
        with pytest.raises(ConfigError, match="empty"):
            ws.search("vacation", user="", groups=["staff"])


@pytest.mark.parametrize("per_document", [True, False])
def test_a_huge_k_is_every_visible_result_not_a_crash(ws: Workspace, per_document: bool) -> None:
    with ws:
        found = ws.search(
            "vacation", groups=["staff"], k=10**20, mode="hybrid", per_document=per_document
        )
        assert found and {r.source for r in found} == {"staff"}
