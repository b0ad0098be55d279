"""The fake Meilisearch keeps the real engine's rules, so the sink's tests can fail:
tasks apply later, filters follow the documented grammar and refuse what it refuses."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from fakes.meilisearch import FakeMeilisearch
from fakes.meilisearch._filter import FilterError, compile_filter


@pytest.fixture
def fake() -> Iterator[FakeMeilisearch]:
    with FakeMeilisearch(task_delay=0.0) as server:
        yield server


def _wait(client: httpx.Client, task_uid: int) -> dict[str, object]:
    for _ in range(500):
        task: dict[str, object] = client.get(f"/tasks/{task_uid}").json()
        if task["status"] in ("succeeded", "failed"):
            return task
    raise AssertionError("the task never ended")


def test_a_client_that_does_not_wait_reads_the_old_data(fake: FakeMeilisearch) -> None:
    with httpx.Client(base_url=fake.url) as client:
        _wait(
            client, client.post("/indexes", json={"uid": "i", "primaryKey": "id"}).json()["taskUid"]
        )
        fake.pause()
        enqueued = client.post("/indexes/i/documents", json=[{"id": "a", "text": "x"}])
        assert enqueued.status_code == 202 and enqueued.json()["status"] == "enqueued"
        assert client.post("/indexes/i/documents/fetch", json={}).json()["total"] == 0
        assert client.get(f"/tasks/{enqueued.json()['taskUid']}").json()["status"] != "succeeded"
        fake.resume()
        assert _wait(client, enqueued.json()["taskUid"])["status"] == "succeeded"
        assert client.post("/indexes/i/documents/fetch", json={}).json()["total"] == 1
        missing = client.get("/indexes/nope")
        assert missing.status_code == 404 and missing.json()["code"] == "index_not_found"


def test_put_merges_fields_and_post_replaces_the_document(fake: FakeMeilisearch) -> None:
    with httpx.Client(base_url=fake.url) as client:
        first = client.post("/indexes/m/documents", json=[{"id": "a", "x": 1, "y": 2}])
        _wait(client, first.json()["taskUid"])
        _wait(
            client, client.put("/indexes/m/documents", json=[{"id": "a", "x": 5}]).json()["taskUid"]
        )
        assert client.get("/indexes/m/documents/a").json() == {"id": "a", "x": 5, "y": 2}
        _wait(
            client,
            client.post("/indexes/m/documents", json=[{"id": "a", "x": 7}]).json()["taskUid"],
        )
        assert client.get("/indexes/m/documents/a").json() == {"id": "a", "x": 7}
        bad = client.post("/indexes/m/documents", json=[{"id": "not ok"}])
        failed = _wait(client, bad.json()["taskUid"])
        assert failed["status"] == "failed"
        assert failed["error"]["code"] == "invalid_document_id"  # type: ignore[index]


def test_the_filter_grammar() -> None:
    doc = {"a": "x", "tags": ["p", 'q"r'], "n": 3, "flag": False}
    filterable = ["a", "tags", "n", "flag", "missing"]
    cases = {
        'a = "x"': True,
        "a = x AND n > 2": True,
        "a != x OR flag = false": True,
        'tags IN ["z", "q\\"r"]': True,
        "NOT (tags = p)": False,
        "tags NOT IN [p]": False,
        "missing NOT EXISTS AND a EXISTS": True,
        "a = y OR (n >= 3 AND n < 4)": True,
        "missing != v": True,
    }
    for text, expected in cases.items():
        assert compile_filter(text, filterable)(doc) is expected, text
    with pytest.raises(FilterError, match="`b` is not filterable"):
        compile_filter("b = 1", filterable)
    for broken in ("a =", "a IN [x", "(a = x", "a ~ x"):
        with pytest.raises(FilterError):
            compile_filter(broken, filterable)
