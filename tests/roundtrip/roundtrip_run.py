"""The round trip per connector, at CI size (issue 29, goal 3): N items (500 in CI) in the real
server or its fake, a sync, then 5 % deleted, 5 % edited and (where the connector carries
an ACL per object) 5 % re-permissioned, a re-sync, and EXACT counts in the run, the
manifest and the sqlite index. A delete that never happens, an edit left stale or a
revocation still served fails the test.

Each case reuses its connector's test helpers (``tests/connectors/<name>/``,
``tests/fakes/``): the real PostgreSQL and MariaDB for ``sql``, moto over HTTP for
``s3``, the git CLI for ``git``, the local HTTP server for ``web``, WsgiDAV for
``webdav``, ``Workspace.push`` (what ``POST /v1/sources/{id}/documents:batch`` commits)
for ``push``, and the fake Drive API for ``gdrive`` and the fake site for
``confluence``; ``saas_cases`` adds ``jira``, ``dropbox`` and ``sharepoint`` on their
fakes, ``azure_blob`` on Azurite and ``gcs`` on fake-gcs-server (real emulators).

Connectors whose ACL is the source's ``access`` (filesystem, s3, git, web, webdav) have
no per-object ACL to change, nor have dropbox (a file's ACL is its shared folder's),
azure_blob and gcs; the ACL step runs where ACLs are per object: sql (``access_column``),
push (each document's ``access``), gdrive and sharepoint (each file's permissions),
confluence (page restrictions) and jira (an issue's security level).

The webdav case starts WsgiDAV in its own process (``subprocess.Popen`` in its conftest),
so the test modules are marked ``process`` and run outside the ``--fast`` tier. The cases
run from two test modules, ``test_roundtrip_local.py`` and ``test_roundtrip_saas.py``, so
that parallel workers take one each; this module holds their fixtures and the round trip.
The other eleven connectors (github, gitlab, notion, zendesk, servicenow, slack, teams, box,
gmail, imap and rss) run from ``test_roundtrip_vendors.py`` and
``test_roundtrip_messages.py`` with their cases in ``vendor_cases`` and ``message_cases``
and their fixture in ``vendor_run``, which also holds the round trips of mail (never
edited) and of a feed (never deleted).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.confluence import FakeConfluence
from fakes.gdrive import FakeDrive
from headwater import Workspace
from headwater.connectors.confluence import ConfluenceConnector
from headwater.connectors.gdrive import GdriveConnector
from headwater.connectors.webdav import WebdavConnector

_CONNECTORS = Path(__file__).resolve().parents[1] / "connectors"
for _name in ("", "s3", "sql", "git", "web", "webdav", "azure_blob", "gcs"):
    sys.path.insert(0, str(_CONNECTORS / _name) if _name else str(_CONNECTORS))

from azure_support import Azurite, azurite  # noqa: E402
from gcs_support import GcsServer, fake_gcs_server  # noqa: E402
from httpserver import LocalHttpServer  # noqa: E402
from local_cases import (  # noqa: E402
    ConfluenceCase,
    FilesystemCase,
    GdriveCase,
    GitCase,
    PushCase,
    S3Case,
    SqlCase,
    WebCase,
    WebdavCase,
)
from s3_support import S3Server  # noqa: E402
from saas_cases import (  # noqa: E402
    NEW_READER,
    STAFF,
    DropboxCase,
    JiraCase,
    N,
    SharepointCase,
    azure_blob_case,
    gcs_case,
)

from fakes.dropbox import FakeDropbox  # noqa: E402
from fakes.jira import FakeJira  # noqa: E402
from fakes.sharepoint import FakeGraph  # noqa: E402
from ports import free_port  # noqa: E402

# The webdav tests' session fixture (a WsgiDAV process), taken from their conftest under
# another module name so pytest serves it here too.
_spec = importlib.util.spec_from_file_location(
    "webdav_conftest", _CONNECTORS / "webdav" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_webdav_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_webdav_conftest)
dav_server = _webdav_conftest.dav_server


@pytest.fixture(scope="module")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    """Azurite's blob service, one per module (as tests/connectors/azure_blob)."""
    with azurite(tmp_path_factory.mktemp("azurite")) as server:
        yield server


@pytest.fixture(scope="module")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsServer]:
    """fake-gcs-server, one per module (as tests/connectors/gcs)."""
    with fake_gcs_server(tmp_path_factory.mktemp("gcs")) as server:
        yield server


FIVE_PERCENT = N // 20
# A delete found by the complete listing is "pruned"; one the source reports (a git diff)
# is "deleted_in_source".
TOMBSTONE_REASONS = ("pruned", "deleted_in_source")


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 API over real HTTP on 127.0.0.1, in a thread (as tests/connectors/s3)."""
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # 2,000 request lines
    port = free_port()
    httpd = make_server(
        "127.0.0.1", port, DomainDispatcherApplication(create_backend_app), threaded=True
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield S3Server(endpoint=f"http://127.0.0.1:{port}")
    httpd.shutdown()
    thread.join()


@pytest.fixture
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    kind = str(request.param)
    if kind == "filesystem":
        yield FilesystemCase(tmp_path / "tree")
    elif kind in ("postgresql", "mariadb"):
        sql = SqlCase(kind)
        try:
            yield sql
        finally:
            sql.close()
    elif kind == "web":
        with LocalHttpServer() as server:
            yield WebCase(server)
    elif kind == "webdav":
        yield WebdavCase(request.getfixturevalue("dav_server"))
    elif kind == "gdrive":
        with FakeDrive() as drive:
            yield GdriveCase(drive)
    elif kind == "confluence":
        with FakeConfluence() as site:
            yield ConfluenceCase(site)
    elif kind == "push":
        yield PushCase()
    elif kind == "s3":
        yield S3Case(request.getfixturevalue("s3_server"))
    elif kind == "jira":
        with FakeJira() as site:
            yield JiraCase(site)
    elif kind == "dropbox":
        with FakeDropbox() as dbx:
            yield DropboxCase(dbx)
    elif kind == "sharepoint":
        with FakeGraph() as graph:
            yield SharepointCase(graph)
    elif kind == "azure_blob":
        yield azure_blob_case(request.getfixturevalue("azurite_server"))
    elif kind == "gcs":
        yield gcs_case(request.getfixturevalue("gcs_server"))
    else:
        yield GitCase(tmp_path / "repo")


def finds(ws: Workspace, i: int, **who: Any) -> bool:
    """Whether a keyword search for item ``i``'s marker returns its document."""
    record = ws.manifest.document_by_object("src", OBJECT_IDS[i])
    assert record is not None, OBJECT_IDS[i]
    hits = ws.search(f"mk{i:04d}x", mode="keyword", k=5, **who)
    return any(h["document_id"] == record.document_id for h in hits)


OBJECT_IDS: dict[int, str] = {}


def load_and_sync(ws: Workspace, case: Any) -> None:
    """Fill the case's source with its N items and sync them: all new, exact counts."""
    case.load()
    OBJECT_IDS.clear()
    OBJECT_IDS.update({i: case.object_id(i) for i in range(N)})
    first = sync(ws, case)
    assert (first["new"], first["failed"]) == (N, 0), first
    assert_exact(ws, active=N, deleted=[], revision_2=[])


def write_config(tmp_path: Path, source: str) -> Path:
    """The round trip's workspace: the fake embedder, one sqlite index, ``source``."""
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 16\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n' + source,
        encoding="utf-8",
    )
    return config


def round_trip(case: Any, tmp_path: Path) -> None:
    """Load, sync, delete, edit and re-permission 5 % each, re-sync; exact counts."""
    config = write_config(tmp_path, case.source())
    # Deterministic, disjoint 5 % slices spread over the whole key range.
    deleted = list(range(0, N, 20))
    edited = list(range(1, N, 20))
    regranted = list(range(2, N, 20)) if case.per_object_acl else []
    assert len(deleted) == len(edited) == FIVE_PERCENT
    with Workspace.open(
        config,
        connector_types={
            "webdav": WebdavConnector,
            "gdrive": GdriveConnector,
            "confluence": ConfluenceConnector,
        },
    ) as ws:
        case.ws = ws
        load_and_sync(ws, case)

        case.mutate(deleted, edited, regranted)
        second = sync(ws, case)
        changed = len(edited) + len(regranted)
        assert second == {"new": 0, "changed": changed, "deleted": FIVE_PERCENT, "failed": 0}
        assert_exact(ws, active=N - FIVE_PERCENT, deleted=deleted, revision_2=edited + regranted)

        reader = getattr(case, "reader", {"groups": [STAFF]})
        for i in edited[:3]:
            hits = ws.search(f"mk{i:04d}x", mode="keyword", k=1, **reader)
            assert "edited today" in hits[0]["chunk"]
        for i in deleted[:3]:
            assert not finds(ws, i, **reader)
        for i in regranted:
            assert not finds(ws, i, **reader), f"{i}: revoked reader still finds it"
            assert finds(ws, i, user=NEW_READER)
        assert finds(ws, 3, **reader) and not finds(ws, 3, user=NEW_READER)


def sync(ws: Workspace, case: Any) -> dict[str, int]:
    """The run's counts: a content sync and index, or the push case's own results."""
    if isinstance(case, PushCase):
        return case.sync(ws)
    run = ws.sync().runs[0]
    assert run.status == "succeeded", run
    c = run.counts
    return {"new": c.new, "changed": c.changed, "deleted": c.deleted, "failed": c.failed}


def assert_exact(ws: Workspace, *, active: int, deleted: list[int], revision_2: list[int]) -> None:
    """The manifest and the sqlite index agree with the source, document for document."""
    manifest = ws.manifest
    assert manifest.count_documents("src") == active
    assert manifest.count_documents("src", "deleted") == len(deleted)
    tombstones = sum(manifest.count_tombstones("src", why) for why in TOMBSTONE_REASONS)
    assert tombstones == len(deleted)
    records = {r.object_id: r for r in manifest.source_documents_after("src", "", 10 * N)}
    assert len(records) == active
    gone = {OBJECT_IDS[i] for i in deleted}
    assert not gone & records.keys()
    bumped = {OBJECT_IDS[i] for i in revision_2}
    for object_id, record in records.items():
        assert record.revision == (2 if object_id in bumped else 1), object_id
    inventory = {row.document_id: row for row in ws.sink("main").inventory()}
    assert inventory.keys() == {r.document_id for r in records.values()}
    for record in records.values():
        row = inventory[record.document_id]
        assert (row.revision, row.chunks) == (record.revision, 1), record.object_id
