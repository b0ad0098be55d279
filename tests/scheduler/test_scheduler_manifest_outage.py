"""The long-running scheduler outlives a short outage of its PostgreSQL manifest.

A real ``headwater run`` reaches the real PostgreSQL server through a TCP relay; the
relay is shut (every connection cut, new ones refused) for a few seconds, as when the
database server restarts. The scheduler logs that the manifest is unreachable, retries,
and goes on syncing once the server answers again, instead of exiting with status 1
and scheduling nothing more until someone restarts it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from sched_helpers import Daemon, run_rows, sources_config, wait_for, write_files
from sqlalchemy.engine import make_url


class Relay:
    """A TCP relay from a local port to ``target``. ``cut`` ends every connection and drops
    new ones at once (the manifest is unreachable) until ``resume``; the relay keeps its
    port all along, so no other process can take it during the outage."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.down = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if self.down.is_set():
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.down.set()
        sockets, self.sockets = self.sockets, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def resume(self) -> None:
        self.down.clear()

    def stop(self) -> None:
        self.cut()
        self.server.close()


def test_the_scheduler_survives_a_manifest_outage(
    tmp_path: Path, pg_url: str, daemons: Callable[..., Daemon]
) -> None:
    real = make_url(pg_url)
    relay = Relay((real.host or "127.0.0.1", real.port or 5432))
    through = real.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
    roots = {"a": write_files(tmp_path / "a", 2)}
    config = sources_config(tmp_path, through, roots, source_extra='refresh_every = "1s"\n')
    daemon = daemons(config)
    wait_for(lambda: len(run_rows(pg_url)) >= 2, 60, "two runs")
    relay.cut()
    wait_for(lambda: "manifest unreachable" in daemon.stderr_so_far(), 60, "the outage logged")
    assert daemon.proc.poll() is None, "the scheduler exited during the outage"
    before = len(run_rows(pg_url))
    relay.resume()

    def succeeded_after_the_outage() -> int:
        return sum(r["status"] == "succeeded" for r in run_rows(pg_url)[before:])

    try:
        wait_for(lambda: succeeded_after_the_outage() >= 2, 60, "runs after the outage")
        code, stderr = daemon.stop()
    finally:
        relay.stop()
    assert code == 0, stderr
    # Only the run our SIGTERM interrupted may end otherwise, and then only as cancelled.
    statuses = [r["status"] for r in run_rows(pg_url)[before:]]
    assert set(statuses[:-1]) == {"succeeded"}, statuses
    assert statuses[-1] in {"succeeded", "cancelled"}, statuses
