"""``POST /v1/hooks/{source_id}`` on a real server: each vendor's signature, handshakes,
401s counted in ``headwater_hooks_rejected_total``, and 202 once the hint is queued.

The requests are built as each vendor documents them (links in
``headwater/hints/vendors.py``): GitHub's ``X-Hub-Signature-256``, Slack's v0 signing
secret with its timestamp, Atlassian's ``X-Hub-Signature`` (jira, confluence), Graph's
``validationToken`` and ``clientState`` (sharepoint), Drive's ``X-Goog-Channel-Token``.
The queue is read back with ``headwater hints --json``, as an operator would.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from api_support import Server, make_workspace, server_env

from ports import free_port

SECRET = "hook-secret-0123456789"
FAKE_API = "http://127.0.0.1:9"  # never called: a webhook only queues hints

SOURCES = f"""
[[source]]
id = "gh"
type = "github"
token = "t"
repos = ["octo/site"]
base_url = "{FAKE_API}"
webhook_secret = "${{HW_HOOK_SECRET}}"

[[source]]
id = "gh-open"
type = "github"
token = "t"
repos = ["octo/site"]
base_url = "{FAKE_API}"

[[source]]
id = "sl"
type = "slack"
token = "t"
base_url = "{FAKE_API}/api"
webhook_secret = "${{HW_HOOK_SECRET}}"

[[source]]
id = "jr"
type = "jira"
base_url = "{FAKE_API}"
email = "bot@acme.test"
api_token = "t"
projects = ["ENG"]
webhook_secret = "${{HW_HOOK_SECRET}}"

[[source]]
id = "cf"
type = "confluence"
base_url = "{FAKE_API}"
email = "bot@acme.test"
api_token = "t"
spaces = ["ENG"]
webhook_secret = "${{HW_HOOK_SECRET}}"

[[source]]
id = "sp"
type = "sharepoint"
token = "t"
site = "contoso"
base_url = "{FAKE_API}/v1.0"
webhook_secret = "${{HW_HOOK_SECRET}}"

[[source]]
id = "gd"
type = "gdrive"
token = "t"
base_url = "{FAKE_API}"
webhook_secret = "${{HW_HOOK_SECRET}}"
"""


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("hooks")
    os.environ["HW_HOOK_SECRET"] = SECRET
    with Server(make_workspace(root, extra=SOURCES), free_port(), root / "server.log") as srv:
        yield srv
        os.environ.pop("HW_HOOK_SECRET", None)


def sign(body: bytes) -> str:
    return hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def post(
    srv: Server, source: str, payload: Any, headers: dict[str, str], **kw: Any
) -> httpx.Response:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return httpx.post(
        f"{srv.url}/v1/hooks/{source}", content=body, headers=headers, timeout=30, **kw
    )


def queued(srv: Server, source: str) -> list[dict[str, Any]]:
    env = server_env() | {"HW_HOOK_SECRET": SECRET}
    done = subprocess.run(
        [sys.executable, "-m", "headwater", "-c", str(srv.config), "hints", source, "--json"],
        capture_output=True, env=env, check=True, timeout=60,
    )  # fmt: skip
    rows: list[dict[str, Any]] = json.loads(done.stdout)["hints"]
    return rows


def rejected(srv: Server, source: str, reason: str) -> float:
    text = httpx.get(f"{srv.url}/metrics", timeout=30).text
    line = f'headwater_hooks_rejected_total{{reason="{reason}",source="{source}"}} '
    found = [x for x in text.splitlines() if x.startswith(line)]
    return float(found[0].split()[-1]) if found else 0.0


def test_github_signed_delivery_queues_the_issue_and_a_forged_one_is_401(hooks: Server) -> None:
    payload = {"action": "edited", "issue": {"number": 7}, "repository": {"full_name": "octo/site"}}
    body = json.dumps(payload).encode()
    good = {"X-GitHub-Event": "issues", "X-Hub-Signature-256": "sha256=" + sign(body)}
    answer = post(hooks, "gh", body, good)
    assert (answer.status_code, answer.json()) == (202, {"queued": 1}), answer.text
    (hint,) = queued(hooks, "gh")
    assert (hint["object_id"], hint["kind"], hint["origin"]) == (
        "octo/site/issues/7",
        "changed",
        "github",
    )
    forged = {"X-GitHub-Event": "issues", "X-Hub-Signature-256": "sha256=" + "0" * 64}
    assert post(hooks, "gh", body, forged).status_code == 401
    assert post(hooks, "gh", body, {"X-GitHub-Event": "issues"}).status_code == 401
    tampered = json.dumps(payload | {"issue": {"number": 8}}).encode()
    assert post(hooks, "gh", tampered, good).status_code == 401  # signature of another body
    assert rejected(hooks, "gh", "bad_signature") == 2.0
    assert rejected(hooks, "gh", "missing_signature") == 1.0
    assert len(queued(hooks, "gh")) == 1
    # a source without `webhook_secret` refuses every delivery, signed or not
    assert post(hooks, "gh-open", body, good).status_code == 401
    assert rejected(hooks, "gh-open", "no_secret") == 1.0


def test_slack_challenge_window_and_forgery(hooks: Server) -> None:
    def headers(body: bytes, stamp: int, secret: str = SECRET) -> dict[str, str]:
        base = b"v0:" + str(stamp).encode() + b":" + body
        mac = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
        return {"X-Slack-Request-Timestamp": str(stamp), "X-Slack-Signature": "v0=" + mac}

    now = int(time.time())
    challenge = json.dumps({"type": "url_verification", "challenge": "3eZbrw1aB"}).encode()
    answer = post(hooks, "sl", challenge, headers(challenge, now))
    assert (answer.status_code, answer.json()) == (200, {"challenge": "3eZbrw1aB"})
    event = json.dumps({"type": "event_callback", "event": {"type": "message"}}).encode()
    assert post(hooks, "sl", event, headers(event, now - 301)).status_code == 401
    assert post(hooks, "sl", event, headers(event, now, "wrong-secret")).status_code == 401
    assert post(hooks, "sl", challenge, headers(event, now)).status_code == 401
    assert rejected(hooks, "sl", "stale_timestamp") == 1.0
    assert rejected(hooks, "sl", "bad_signature") == 2.0
    answer = post(hooks, "sl", event, headers(event, now))
    assert answer.status_code == 202
    assert [h["kind"] for h in queued(hooks, "sl")] == ["scope"]


@pytest.mark.parametrize(
    ("source", "payload", "object_id", "kind"),
    [
        ("jr", {"webhookEvent": "jira:issue_updated", "issue": {"id": "10001", "key": "ENG-1"}},
         "10001", "changed"),
        ("cf", {"eventType": "page_removed", "page": {"id": 98765}}, "98765", "deleted"),
    ],
)  # fmt: skip
def test_atlassian_signature(
    hooks: Server, source: str, payload: dict[str, Any], object_id: str, kind: str
) -> None:
    body = json.dumps(payload).encode()
    assert post(hooks, source, body, {"X-Hub-Signature": "sha256=" + "f" * 64}).status_code == 401
    assert post(hooks, source, body, {}).status_code == 401
    assert rejected(hooks, source, "bad_signature") == 1.0
    answer = post(hooks, source, body, {"X-Hub-Signature": "sha256=" + sign(body)})
    assert answer.status_code == 202
    (hint,) = queued(hooks, source)
    assert (hint["object_id"], hint["kind"]) == (object_id, kind)


def test_sharepoint_validation_and_client_state(hooks: Server) -> None:
    answer = post(hooks, "sp", b"", {}, params={"validationToken": "Validation: token 123"})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    assert answer.text == "Validation: token 123"
    note = {"subscriptionId": "s1", "changeType": "updated", "resource": "drives/d1/root"}
    wrong = {"value": [note | {"clientState": "guess"}]}
    assert post(hooks, "sp", wrong, {}).status_code == 401
    assert post(hooks, "sp", {"value": [note]}, {}).status_code == 401
    assert rejected(hooks, "sp", "bad_signature") == 1.0
    assert post(hooks, "sp", {"value": [note | {"clientState": SECRET}]}, {}).status_code == 202
    assert [h["kind"] for h in queued(hooks, "sp")] == ["scope"]


def test_gdrive_channel_token(hooks: Server) -> None:
    base = {"X-Goog-Channel-ID": "ch-1", "X-Goog-Resource-ID": "r-1"}
    wrong = base | {"X-Goog-Channel-Token": "guess", "X-Goog-Resource-State": "change"}
    assert post(hooks, "gd", b"", wrong).status_code == 401
    assert post(hooks, "gd", b"", base | {"X-Goog-Resource-State": "change"}).status_code == 401
    assert rejected(hooks, "gd", "bad_signature") == 1.0
    sync = base | {"X-Goog-Channel-Token": SECRET, "X-Goog-Resource-State": "sync"}
    answer = post(hooks, "gd", b"", sync)
    assert (answer.status_code, answer.json()) == (202, {"queued": 0})
    assert queued(hooks, "gd") == []
    change = sync | {"X-Goog-Resource-State": "change"}
    assert post(hooks, "gd", b"", change).status_code == 202
    assert [h["kind"] for h in queued(hooks, "gd")] == ["scope"]


def test_unknown_sources_and_types_without_webhooks_are_404(hooks: Server) -> None:
    assert post(hooks, "nope", {}, {}).status_code == 404
    answer = post(hooks, "docs", {}, {})  # a filesystem source: `watch = true`, no webhooks
    assert answer.status_code == 404 and "watch" in answer.text


def hint_gauges(srv: Server, name: str) -> dict[str, float]:
    text = httpx.get(f"{srv.url}/metrics", timeout=30).text
    prefix = f'{name}{{source="'
    return {
        line[len(prefix) :].split('"')[0]: float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith(prefix)
    }


def test_hint_queue_depth_and_oldest_age_are_metrics(hooks: Server) -> None:
    for number in (101, 102, 102):  # two objects; the second one's hints merge into one row
        payload = {"action": "edited", "issue": {"number": number}}
        body = json.dumps(payload | {"repository": {"full_name": "octo/site"}}).encode()
        good = {"X-GitHub-Event": "issues", "X-Hub-Signature-256": "sha256=" + sign(body)}
        assert post(hooks, "gh", body, good).status_code == 202
    rows = queued(hooks, "gh")
    assert {"octo/site/issues/101", "octo/site/issues/102"} <= {r["object_id"] for r in rows}
    depth = hint_gauges(hooks, "headwater_hints_queue_depth")
    age = hint_gauges(hooks, "headwater_hints_oldest_age_seconds")
    assert depth["gh"] == len(rows) >= 2
    oldest = min(datetime.fromisoformat(r["received_at"]) for r in rows)
    expected = (datetime.now(UTC) - oldest).total_seconds()  # read after the scrape: larger
    assert 0 < age["gh"] <= expected, (age["gh"], expected)
    # Every configured source has both gauges, 0 with nothing queued.
    with hooks.client() as c:
        configured = {s["id"] for s in c.get("/v1/status").json()["sources"]}
    assert set(depth) == set(age) == configured
    assert depth["gh-open"] == 0 and age["gh-open"] == 0
