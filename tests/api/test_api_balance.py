"""Each ``serve --workers N`` worker holds its share of the keep-alive connections
(``api/balance.py``), and startup's objects are out of the cyclic collector's way.

The count from ``/proc``: the server's side of each established connection on the port,
this process's among them, the excess over the share rounded up. Two workers, two real
processes: with one worker stopped (SIGSTOP) every connection a client opens lands on the
other; once it runs again, the crowded worker closes its excess after their next answer
(``Connection: close``, then EOF) and the clients' new connections reach the other worker
until each holds its share. Without the balance the second worker would serve none of
them, however long the clients go on.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import time
from pathlib import Path

import psutil
import pytest
from api_support import KEYS, Server, make_workspace, wait_for
from fastapi.testclient import TestClient

from headwater.api.app import create_app
from headwater.api.balance import Balance, established_on, excess, own_sockets
from ports import free_port

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: headwater\r\n\r\n"
HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"


def row(local: str, remote: str, state: str, inode: int) -> str:
    return (
        f"   0: {local} {remote} {state} 00000000:00000000 00:00000000 00000000  0  0 {inode} 1 0\n"
    )


def test_established_connections_on_the_port_are_counted(tmp_path: Path) -> None:
    v4, v6 = tmp_path / "tcp", tmp_path / "tcp6"
    v4.write_text(
        HEADER
        + row("0100007F:1F90", "00000000:0000", "0A", 10)  # the listening socket
        + row("0100007F:1F90", "0100007F:D431", "01", 11)  # server side, established
        + row("0100007F:D431", "0100007F:1F90", "01", 12)  # the client's side
        + row("0100007F:1F90", "0100007F:D432", "06", 13)  # TIME_WAIT
        + row("0100007F:1F91", "0100007F:D433", "01", 14)  # another port
    )
    v6.write_text(HEADER + row("00000000000000000000000001000000:1F90", "0:D434", "01", 15))
    assert established_on(8080, (v4, v6, tmp_path / "absent")) == {"11", "15"}


def test_own_sockets_are_the_socket_links_among_the_fds(tmp_path: Path) -> None:
    for fd, target in [("3", "socket:[11]"), ("4", "/dev/null"), ("5", "socket:[15]")]:
        os.symlink(target, tmp_path / fd)
    assert own_sockets(tmp_path) == {"11", "15"}
    assert own_sockets(tmp_path / "absent") == set()


def test_one_worker_never_closes_for_balance() -> None:
    assert not Balance(1).take(8080)
    assert excess(8080, 1) == 0


def answer(conn: socket.socket) -> bool:
    """Read one response off ``conn``; whether it said ``Connection: close`` (then the
    server must close the connection: nothing more comes, EOF)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        assert chunk, f"the connection closed before an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK"), head
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    while len(body) < length:
        body += conn.recv(65536)
    closing = b"connection: close" in head.lower()
    if closing:
        assert conn.recv(1) == b"", "the server said Connection: close but kept it open"
    return closing


def workers_of(srv: Server) -> list[psutil.Process]:
    """uvicorn's worker processes (not its multiprocessing resource tracker)."""
    assert srv.process is not None
    return [
        child
        for child in psutil.Process(srv.process.pid).children(recursive=True)
        if "spawn_main" in " ".join(child.cmdline())
    ]


def held_by(worker: psutil.Process, port: int) -> int:
    """The connections to ``port`` that ``worker`` holds open."""
    return sum(
        1
        for c in worker.net_connections(kind="tcp")
        if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == port
    )


def test_connections_move_to_a_worker_that_had_none(tmp_path: Path) -> None:
    server = Server(
        make_workspace(tmp_path), free_port(), tmp_path / "server.log", args=["--workers", "2"]
    ).start()
    clients: list[socket.socket] = []

    def connect() -> socket.socket:
        """A connection a worker holds (its first request answered, and not closed)."""
        while True:
            conn = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            conn.sendall(REQUEST)
            if not answer(conn):
                return conn
            conn.close()  # landed on a worker over its share: again

    try:
        wait_for(lambda: server.log.read_text().count("Application startup complete") == 2, 60)
        first, second = workers_of(server)
        second.send_signal(signal.SIGSTOP)
        try:
            # all answered by the first worker while the second is stopped (the first may
            # close some as it goes over its share: connect() opens those again)
            clients = [connect() for _ in range(12)]
            assert (held_by(first, server.port), held_by(second, server.port)) == (12, 0)
        finally:
            second.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 60
        while (held_by(first, server.port), held_by(second, server.port)) != (6, 6):
            assert time.monotonic() < deadline, "the connections did not spread"
            for number, conn in enumerate(clients):
                conn.sendall(REQUEST)
                if answer(conn):  # closed for balance: the client connects again
                    conn.close()
                    clients[number] = connect()
            time.sleep(0.05)  # the clients' pace; the balance is read once a second
    finally:
        for conn in clients:
            conn.close()
        server.stop()


def test_startup_freezes_what_it_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for role, key in KEYS.items():
        monkeypatch.setenv(f"HW_{role.upper()}_KEY", key)
    gc.unfreeze()
    try:
        with TestClient(create_app(make_workspace(tmp_path))) as client:
            assert client.get("/healthz").status_code == 200
            assert gc.get_freeze_count() > 10_000  # the modules, the app, the workspace
    finally:
        gc.unfreeze()
