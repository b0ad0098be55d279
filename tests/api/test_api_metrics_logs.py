"""Metrics operators alert on, the shipped alert rules and dashboard, and JSON logs.

One real ``headwater serve --log-format json`` (keep_runs_for = 0s): three syncs, a
scrape, ``headwater housekeeping`` in its own process pruning the run history, another
scrape: ``headwater_runs_total`` never went down. The examples reference only metrics the
server exposes. Every line the server wrote (uvicorn's included) parses as JSON.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import yaml
from api_support import KEYS, Server, make_workspace, server_env, wait_for

from ports import free_port

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAMPLE = re.compile(r"^(\w+)(?:\{(.*)\})? (\S+)$")
DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")
METRIC = re.compile(r"\b(headwater_[a-z_]+)")


@pytest.fixture(scope="module")
def json_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("jsonlogs")
    config = make_workspace(root, extra='\n[scheduler]\nkeep_runs_for = "0s"\n')
    with Server(config, free_port(), root / "server.log", args=["--log-format", "json"]) as srv:
        yield srv


def samples(text: str) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match and not line.startswith("#"):
            out[(match[1], match[2] or "")] = float(match[3])
    return out


def sync(srv: Server) -> None:
    with srv.client() as c:
        job = c.post("/v1/sources/docs/sync").json()
        wait_for(lambda: c.get(f"/v1/jobs/{job['job_id']}").json()["status"] == "done")


def test_runs_total_survives_housekeeping_and_new_metrics_exist(json_server: Server) -> None:
    for _ in range(3):
        sync(json_server)
    before = samples(json_server.client(None).get("/metrics").text)
    key = ("headwater_runs_total", 'source="docs",status="completed_with_errors"')
    assert before[key] == 3.0  # broken.pdf fails each run
    housekeeping = subprocess.run(
        [sys.executable, "-m", "headwater", "-c", str(json_server.config), "housekeeping",
         "--json"],
        capture_output=True, text=True, env=server_env(), timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(housekeeping.stdout)["runs"] >= 2  # the history did shrink
    after = samples(json_server.client(None).get("/metrics").text)
    assert after[key] == before[key]
    durations = ("headwater_run_duration_seconds_count", 'source="docs"')
    assert after[durations] < before[durations]  # that one is the retained history
    assert after[("headwater_source_last_success_timestamp_seconds", 'source="docs"')] > 0
    status = 'source="docs",status="completed_with_errors"'
    assert after[("headwater_source_last_run_status", status)] == 1.0
    assert after[("headwater_source_last_run_status", 'source="docs",status="failed"')] == 0.0
    assert ("headwater_source_last_success_timestamp_seconds", 'source="inbox"') not in after
    route = 'method="POST",route="/v1/sources/{source_id}/sync",status="202"'
    assert after[("headwater_http_requests_total", route)] == 3.0
    latency = 'method="POST",route="/v1/sources/{source_id}/sync"'
    assert after[("headwater_http_request_duration_seconds_count", latency)] == 3.0
    assert ("headwater_lease_takeovers_total", 'source="docs"') in after


def exposed_names(srv: Server) -> set[str]:
    with srv.client("search") as c:  # a search, so its latency histogram has samples
        assert c.post("/v1/search", json={"query": "vacation"}).status_code == 200
    text = srv.client(None).get("/metrics").text
    names = {m[0] for m in samples(text)}
    return names | {n.removesuffix("_total") for n in names}


def test_alert_rules_are_well_formed_and_use_exposed_metrics(json_server: Server) -> None:
    sync(json_server)
    exposed = exposed_names(json_server)
    rules = yaml.safe_load((EXAMPLES / "prometheus-alerts.yml").read_text())
    assert set(rules) == {"groups"} and rules["groups"]
    names = [g["name"] for g in rules["groups"]]
    assert len(names) == len(set(names))  # promtool: group names are unique
    for group in rules["groups"]:
        assert set(group) <= {"name", "interval", "rules"} and group["rules"]
        for rule in group["rules"]:
            assert ("alert" in rule) != ("record" in rule), rule
            assert set(rule) <= {"alert", "record", "expr", "for", "labels", "annotations"}
            assert isinstance(rule["expr"], str) and rule["expr"].strip()
            assert rule["expr"].count("(") == rule["expr"].count(")"), rule["expr"]
            assert DURATION.match(rule.get("for", "0s")), rule.get("for")
            for part in ("labels", "annotations"):
                assert all(isinstance(v, str) for v in rule.get(part, {}).values())
            assert rule["labels"]["severity"] in ("info", "warning", "critical")
            assert {"summary", "description"} <= set(rule["annotations"])
            used = set(METRIC.findall(rule["expr"]))
            assert used and used <= exposed, used - exposed


DASHBOARD_SCHEMA = {
    "type": "object",
    "required": ["title", "uid", "schemaVersion", "panels"],
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "uid": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,40}$"},
        "schemaVersion": {"type": "integer", "minimum": 30},
        "panels": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["id", "type", "title", "gridPos", "targets", "datasource"],
                "properties": {
                    "id": {"type": "integer"},
                    "type": {"enum": ["timeseries", "stat", "gauge", "table", "bargauge"]},
                    "gridPos": {
                        "type": "object",
                        "required": ["h", "w", "x", "y"],
                        "properties": {"w": {"type": "integer", "maximum": 24}},
                    },
                    "targets": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"type": "object", "required": ["refId", "expr"]},
                    },
                },
            },
        },
    },
}


def test_grafana_dashboard_is_well_formed_and_uses_exposed_metrics(json_server: Server) -> None:
    sync(json_server)
    exposed = exposed_names(json_server)
    dashboard = json.loads((EXAMPLES / "grafana-dashboard.json").read_text())
    jsonschema.validate(dashboard, DASHBOARD_SCHEMA)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            used = set(METRIC.findall(target["expr"]))
            assert used and used <= exposed, (panel["title"], used - exposed)


def test_every_line_the_server_writes_is_json(json_server: Server) -> None:
    sync(json_server)
    with json_server.client() as c:
        assert c.get("/v1/status").status_code == 200
        assert c.get("/no/such/page").status_code == 404
    json_server.stop()  # the shutdown lines too
    lines = json_server.log.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # raises on the first non-JSON line
    assert len(records) > 10
    loggers = {r["logger"] for r in records}
    assert {"uvicorn.error", "uvicorn.access"} <= loggers
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    assert any(r["path"] == "/no/such/page" and r["status_code"] == 404 for r in access)
    assert all("\x1b" not in line for line in lines)  # no colour codes


def test_every_line_of_serve_with_workers_is_json(tmp_path: Path) -> None:
    # Worker processes are spawned without the parent's handlers: the log config that
    # serve hands uvicorn builds JSON handlers (masking the config's secrets) in each.
    config = make_workspace(tmp_path)
    srv = Server(config, free_port(), tmp_path / "server.log", args=["--workers", "2"])
    srv.args += ["--log-format", "json"]
    srv.start()
    try:
        for _ in range(4):
            with srv.client() as c:
                assert c.get("/v1/status").status_code == 200
    finally:
        srv.stop()
    text = srv.log.read_text()
    records = [json.loads(line) for line in text.splitlines()]
    pids = {r["msg"] for r in records if r["msg"].startswith("Started server process")}
    assert len(pids) == 2  # both workers' lines, as JSON
    assert any(r["logger"] == "uvicorn.access" and r["path"] == "/v1/status" for r in records)
    assert KEYS["admin"] not in text
