"""Randomized permissions through the API: no hit outside the caller's rights, any mode.

Three push sources' worth of documents (two push sources and the filesystem one) with
random ACLs; 20 users with random groups search in every mode with the asserting key.
Every hit's document ACL (read back from the manifest) must meet the caller's principals.
"""

from __future__ import annotations

import random
from pathlib import Path

from api_support import Server, make_workspace, wait_for

from headwater.types import caller_principals
from ports import free_port

GROUPS = [f"g{i}" for i in range(6)]
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]


def test_no_hit_outside_the_callers_rights(tmp_path: Path) -> None:
    rng = random.Random(14)
    extra = '\n[[source]]\nid = "crm"\ntype = "push"\naccess = { groups = ["g0"] }\n'
    config = make_workspace(tmp_path, extra, ingest_sources=("inbox", "crm"))
    srv = Server(config, free_port(), tmp_path / "server.log").start()
    users = [f"u{i}@acme.test" for i in range(20)]
    try:
        with srv.client("ingest") as ingest:
            for source in ("inbox", "crm"):
                ops = []
                for n in range(40):
                    access = {
                        "users": rng.sample(users, rng.randint(0, 2)),
                        "groups": rng.sample(GROUPS, rng.randint(0, 2)),
                        "public": rng.random() < 0.1,
                    }
                    op = {
                        "object_id": f"d{n}",
                        "version": 1,
                        "access": access,
                        "text": " ".join(rng.choices(WORDS, k=12)),
                    }
                    if rng.random() < 0.2:
                        del op["access"]  # the source's default ACL
                    ops.append(op)
                r = ingest.post(f"/v1/sources/{source}/documents:batch", json={"operations": ops})
                assert all(x["status"] == "new" for x in r.json()["results"])
        with srv.client() as admin:
            admin.post("/v1/sources/docs/sync")
            wait_for(
                lambda: (
                    admin.get("/v1/indexes").json()["indexes"]["main"]["pending"] == 0
                    and admin.get("/v1/sources").json()["sources"][0]["documents"]
                    == 3  # + broken.pdf
                )
            )
            acl_of: dict[str, set[str]] = {}

            def acl(document_id: str) -> set[str]:
                if document_id not in acl_of:
                    doc = admin.get(f"/v1/documents/{document_id}").json()
                    a = doc["access"]
                    acl_of[document_id] = set(
                        caller_principals(None, a["groups"])
                        if a["public"]
                        else [f"group:{g}" for g in a["groups"]]
                    ) | {f"user:{u}" for u in a["users"]}
                    if not a["public"]:
                        acl_of[document_id].discard("public")
                return acl_of[document_id]

            seen_hits = 0
            with srv.client("backend") as backend:
                for user in users:
                    groups = rng.sample([*GROUPS, "staff"], rng.randint(0, 3))
                    mine = set(caller_principals(user, groups))
                    for mode in ("hybrid", "vector", "keyword"):
                        for word in rng.sample(WORDS, 2):
                            body = {
                                "query": word,
                                "user": user,
                                "groups": groups,
                                "mode": mode,
                                "k": 50,
                            }
                            for hit in backend.post("/v1/search", json=body).json()["results"]:
                                seen_hits += 1
                                assert acl(hit["document_id"]) & mine, (user, groups, hit)
            assert seen_hits > 100  # the test searched something
    finally:
        srv.stop()
