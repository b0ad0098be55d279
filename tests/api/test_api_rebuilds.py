"""``/v1/rebuilds`` against a real server: the CLI's rebuild and its actions over HTTP.

A rebuild answers the CLI's report, or runs as a background job (202) followed to it;
the actions answer the CLI's ``--json``; an unknown index is a 404 and a state the
action cannot apply to a 409, with the CLI's message.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
from api_support import Server, server_env, wait_for


def finished(client: httpx.Client, job: dict[str, Any]) -> dict[str, Any]:
    """The job once it ended (done or failed)."""
    url = f"/v1/rebuilds/jobs/{job['job_id']}"
    wait_for(lambda: client.get(url).json()["status"] in ("done", "failed"), timeout=60)
    answer: dict[str, Any] = client.get(url).json()
    return answer


def cli_status(server: Server) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "headwater",
            "-c",
            str(server.config),
            "rebuild",
            "status",
            "--json",
        ],
        capture_output=True,
        env=server_env(),
        check=True,
        timeout=120,
    )
    status: dict[str, Any] = json.loads(out.stdout)
    return status


def test_a_rebuild_job_builds_switches_and_the_actions_follow(server: Server) -> None:
    with server.client() as c:
        sync = c.post("/v1/sources/docs/sync").json()
        wait_for(lambda: c.get(f"/v1/jobs/{sync['job_id']}").json()["status"] == "done")
        wait_for(lambda: c.get("/v1/indexes").json()["indexes"]["main"]["pending"] == 0)
        nothing = c.post("/v1/rebuilds")
        assert nothing.status_code == 200, nothing.text
        assert nothing.json() == {"indexes": [{"index": "main", "result": "up_to_date", "live": 1}]}
        in_background = c.post("/v1/rebuilds/jobs")
        assert in_background.status_code == 202, in_background.text
        assert finished(c, in_background.json())["report"] == nothing.json()

        started = c.post("/v1/rebuilds/jobs", json={"indexes": ["main"], "force": True})
        assert started.status_code == 202, started.text
        job = started.json()
        assert set(job) == {"job_id", "indexes", "force", "switch", "status", "report", "error"}
        assert job["indexes"] == ["main"] and job["force"] and job["switch"]
        done = finished(c, job)
        assert done["status"] == "done" and done["error"] is None, done
        entry = done["report"]["indexes"][0]
        assert entry["result"] == "switched" and entry["generation"] == 2, entry
        assert set(entry) == {"index", "generation", "index_report", "result"}

        status = c.get("/v1/rebuilds")
        assert status.status_code == 200
        assert status.json() == cli_status(server)
        assert status.json()["indexes"][0]["live"] == 2

        rolled = c.post("/v1/rebuilds/main/rollback")
        assert rolled.status_code == 200, rolled.text
        assert set(rolled.json()) == {"index", "live", "pending", "index_report"}
        assert rolled.json()["live"] == 1

        kept = c.post("/v1/rebuilds", json={"force": True, "switch": False})
        assert kept.status_code == 200, kept.text
        assert kept.json()["indexes"][0]["result"] == "ready", kept.text
        assert set(kept.json()["indexes"][0]) == {"index", "generation", "index_report", "result"}
        switched = c.post("/v1/rebuilds/main/switch")
        assert switched.status_code == 200, switched.text
        assert switched.json()["result"] == "switched" and switched.json()["generation"] == 3

        finished(c, c.post("/v1/rebuilds/jobs", json={"force": True, "switch": False}).json())
        cancelled = c.post("/v1/rebuilds/main/cancel")
        assert cancelled.json() == {"index": "main", "cancelled": 4}, cancelled.text
        retired = c.post("/v1/rebuilds/main/retire")
        assert retired.status_code == 200 and retired.json()["index"] == "main", retired.text


def test_unknown_indexes_are_404_and_impossible_actions_409(server: Server) -> None:
    with server.client() as c:
        for action in ("switch", "rollback", "cancel", "retire"):
            r = c.post(f"/v1/rebuilds/nope/{action}")
            assert r.status_code == 404, r.text
            assert "index 'nope' is not configured" in r.json()["error"]
        for path in ("/v1/rebuilds", "/v1/rebuilds/jobs"):
            unknown = c.post(path, json={"indexes": ["main", "nope"]})
            assert unknown.status_code == 404 and set(unknown.json()) == {"error"}
        missing = c.get("/v1/rebuilds/jobs/nope")
        assert missing.status_code == 404 and set(missing.json()) == {"error"}
        nothing = c.post("/v1/rebuilds/main/cancel")
        assert nothing.status_code == 409, nothing.text
        assert "no generation in progress to cancel" in nothing.json()["error"]
        no_ready = c.post("/v1/rebuilds/main/switch")
        assert no_ready.status_code == 409, no_ready.text
        assert "no ready generation" in no_ready.json()["error"]
        bad = c.post("/v1/rebuilds", json={"force": "maybe"})
        assert bad.status_code == 422 and set(bad.json()) == {"error"}


def test_rebuilds_need_the_admin_role(server: Server) -> None:
    for role in ("search", "ingest"):
        with server.client(role) as c:
            assert c.get("/v1/rebuilds").status_code == 403
            assert c.post("/v1/rebuilds", json={}).status_code == 403
            assert c.post("/v1/rebuilds/jobs", json={}).status_code == 403
    with server.client(None) as anon:
        assert anon.post("/v1/rebuilds/main/cancel").status_code == 401
