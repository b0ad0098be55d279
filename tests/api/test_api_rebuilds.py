"""``/v1/rebuilds`` against a real server: the CLI's rebuild and its actions over HTTP.

A rebuild answers the CLI's report, or runs as a background job (202) followed to it;
the actions answer the CLI's ``--json``; an unknown index is a 404 and a state the
action cannot apply to a 409, with the CLI's message.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import httpx
import pytest
from api_support import Server, server_env, wait_for
from fastapi import HTTPException

from headwater.api.service import Service
from headwater.api.v1_rebuilds import not_while_rebuilding
from headwater.errors import ConfigError
from headwater.indexer.report import IndexReport
from headwater.rebuilds.results import RebuildEntry, RebuildReport


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


class SlowRebuilds:
    """A workspace whose rebuild waits until released (or fails, when told to)."""

    def __init__(self, failure: Exception | None = None) -> None:
        self.release = threading.Event()
        self.failure = failure

    def index_section(self, name: str) -> None:
        if name != "main":
            raise ConfigError(f"index {name!r} is not configured; expected one of: main.")

    def rebuild(self, names: Any, *, force: bool, switch: bool) -> RebuildReport:
        assert self.release.wait(10)
        if self.failure is not None:
            raise self.failure
        return RebuildReport((RebuildEntry("main", "switched", 2, IndexReport()),))


def test_one_rebuild_at_a_time_and_the_actions_wait_for_none() -> None:
    ws = SlowRebuilds()
    service = Service(ws)  # type: ignore[arg-type]
    job = service.start_rebuild(["main"], force=True, switch=True)
    assert job is not None and service.rebuilding() is job
    assert service.start_rebuild(None, force=False, switch=True) is None
    with pytest.raises(HTTPException) as refused:
        not_while_rebuilding(service, "switch")
    assert refused.value.status_code == 409 and job.job_id in str(refused.value.detail)
    ws.release.set()
    assert job.result()["indexes"][0]["result"] == "switched"
    assert job.as_dict()["status"] == "done" and service.rebuilding() is None
    not_while_rebuilding(service, "switch")
    with pytest.raises(ConfigError, match="'nope' is not configured"):
        service.start_rebuild(["nope"], force=False, switch=True)


def test_a_failed_rebuild_job_says_why_and_a_waiting_request_gets_the_error() -> None:
    ws = SlowRebuilds(ConfigError("the embedder cannot be loaded"))
    service = Service(ws)  # type: ignore[arg-type]
    job = service.start_rebuild(None, force=False, switch=True)
    assert job is not None
    ws.release.set()
    with pytest.raises(ConfigError, match="the embedder cannot be loaded"):
        job.result()
    body = job.as_dict()
    assert body["status"] == "failed" and body["report"] is None
    assert body["error"] == "ConfigError: the embedder cannot be loaded"
