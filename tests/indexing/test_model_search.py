"""End to end with the real bundled model on the demo corpus (examples/acme).

Hand-written queries must find the right document; callers outside a document's
groups must never see it; an edit re-embeds only the chunks it changed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater import Workspace

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme"
QUERIES = json.loads((ACME / "queries.json").read_text())["queries"]

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def acme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Workspace]]:
    root = tmp_path_factory.mktemp("acme")
    shutil.copytree(ACME, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".headwater"))
    ws = Workspace.open(root)
    result = ws.sync()
    assert all(r.status == "succeeded" for r in result.runs), [r.as_dict() for r in result.runs]
    yield root, ws
    ws.close()


def expected_id(ws: Workspace, path: str) -> str:
    audience, name = path.split("/", 1)
    source = {"public": "public-site"}.get(audience, audience)
    return str(ws.document(source=source, object_id=name)["document_id"])


@pytest.mark.parametrize("case", QUERIES, ids=[q["query"][:40] for q in QUERIES])
def test_hand_written_queries_find_the_right_document(
    acme: tuple[Path, Workspace], case: dict[str, object]
) -> None:
    _, ws = acme
    groups = list(case["groups"])  # type: ignore[call-overload]
    want = expected_id(ws, str(case["expect"]))
    results = ws.search(str(case["query"]), user="tester@acme.example", groups=groups, k=5)
    top = [r["document_id"] for r in results]
    assert want in top[:3], f"{case['expect']} not in the top 3: {[r['title'] for r in results]}"
    for hidden in case["hidden_from"]:  # type: ignore[attr-defined]
        others = ws.search(str(case["query"]), user="other@acme.example", groups=list(hidden), k=20)
        assert want not in {r["document_id"] for r in others}


def test_two_users_see_different_results(acme: tuple[Path, Workspace]) -> None:
    _, ws = acme
    query = "what happens when a robot fails to dock"
    engineer = ws.search(query, user="dana@acme.example", groups=["staff", "engineering"], k=5)
    visitor = ws.search(query, user="visitor@example.com", k=5)
    assert {r["source"] for r in visitor} <= {"public-site"}
    assert any(r["source"] == "engineering" for r in engineer)
    assert [r["document_id"] for r in engineer] != [r["document_id"] for r in visitor]


def test_one_paragraph_edit_re_embeds_only_its_chunks(acme: tuple[Path, Workspace]) -> None:
    root, ws = acme
    target = root / "docs" / "engineering" / "oncall-handbook.md"
    chunks = ws.document(source="engineering", object_id="oncall-handbook.md")["indexes"]["main"][
        "chunks"
    ]
    paragraphs = target.read_text().split("\n\n")
    middle = len(paragraphs) // 2
    paragraphs[middle] += " Pagers are tested every Monday at ten."
    target.write_text("\n\n".join(paragraphs))
    result = ws.sync(["engineering"])
    assert result.runs[0].counts.changed == 1
    assert 1 <= result.index.embedded <= 3, (result.index.embedded, chunks)
    assert result.index.cache_hits >= chunks - 3
