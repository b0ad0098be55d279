"""The fake OpenSearch keeps the real cluster's rules, so the sink's tests can fail:
near-real-time search, strict mappings, atomic alias actions, unsearchable fields."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from fakes.opensearch import FakeOpensearch

MAPPING = {
    "mappings": {
        "dynamic": "strict",
        "properties": {
            "k": {"type": "keyword"},
            "t": {"type": "text"},
            "hidden": {"type": "keyword", "index": False},
        },
    }
}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with FakeOpensearch() as fake, httpx.Client(base_url=fake.url) as http:
        assert http.put("/i", json=MAPPING).json()["acknowledged"]
        yield http


def _bulk(client: httpx.Client, lines: list[dict[str, object]], **params: str) -> dict[str, object]:
    payload = "\n".join(json.dumps(line) for line in lines) + "\n"
    headers = {"Content-Type": "application/x-ndjson"}
    answer: dict[str, object] = client.post(
        "/_bulk", content=payload, params=params, headers=headers
    ).json()
    return answer


def test_search_sees_a_write_only_after_a_refresh(client: httpx.Client) -> None:
    answer = _bulk(client, [{"index": {"_index": "i", "_id": "a"}}, {"k": "x", "t": "hello"}])
    assert answer["errors"] is False
    assert client.get("/i/_doc/a").json()["found"] is True  # realtime get
    assert client.post("/i/_count", json={"query": {"term": {"k": "x"}}}).json()["count"] == 0
    client.post("/i/_refresh")
    assert client.post("/i/_count", json={"query": {"term": {"k": "x"}}}).json()["count"] == 1


def test_strict_mappings_and_unsearchable_fields_are_refused(client: httpx.Client) -> None:
    answer = _bulk(
        client,
        [
            {"index": {"_index": "i", "_id": "a"}},
            {"k": "x", "extra": 1},
            {"delete": {"_index": "i", "_id": "zz"}},
        ],
        refresh="wait_for",
    )
    first, second = answer["items"]  # type: ignore[misc]
    assert answer["errors"] is True
    assert first["index"]["error"]["type"] == "strict_dynamic_mapping_exception"
    assert second["delete"]["result"] == "not_found" and "error" not in second["delete"]
    refused = client.post("/i/_search", json={"query": {"term": {"hidden": "x"}}})
    assert refused.status_code == 400 and "not indexed" in refused.json()["error"]["reason"]
    unsorted = client.post("/i/_search", json={"sort": [{"t": "asc"}]})
    assert unsorted.status_code == 400


def test_alias_actions_apply_all_or_none(client: httpx.Client) -> None:
    client.put("/j", json=MAPPING)
    assert (
        client.post(
            "/_aliases", json={"actions": [{"add": {"index": "i", "alias": "a"}}]}
        ).status_code
        == 200
    )
    failing = {
        "actions": [
            {"remove": {"index": "i", "alias": "a"}},
            {"add": {"index": "j", "alias": "a"}},
            {"remove": {"index": "j", "alias": "nope"}},
        ]
    }
    assert client.post("/_aliases", json=failing).status_code == 404
    assert client.get("/_alias/a").json() == {"i": {"aliases": {"a": {}}}}
    assert client.get("/_alias/nope").status_code == 404
