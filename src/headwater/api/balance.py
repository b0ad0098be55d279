"""Each ``serve --workers N`` worker holds its share of the server's keep-alive connections.

The workers share one listening socket and a connection stays with the worker that
accepted it, which is a race that knows nothing of how many each already holds: the first
worker to finish starting takes every connection opened before the others listen, and an
idle worker's event loop takes a burst in one wake-up (50 connections opened together
landed 50/0 and 35/15 on two workers; under load 42/8 and 36/14). A client that keeps its
connections open (a search front end, a proxy's upstream pool) then queues behind one
worker while another idles or serves a few: p95 is the crowded worker's.

So a worker that holds more than its share closes the excess: the answer to a request
on one of them says ``Connection: close`` (``BalanceConnections``), the client connects
again, and the new connection goes to any worker; the ones that land over a share leave
again, until each worker holds its share, rounded up. Linux says both halves of the sum:
``/proc/net/tcp`` (and ``tcp6``) list every established TCP connection of the network
namespace, the server's side of each with the listening port as its local port, and
``/proc/self/fd`` says which of those sockets are this process's. Read at most once a
second; where ``/proc`` does not say (not Linux, a Unix socket), nothing is closed.
"""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path

from starlette.types import ASGIApp, Message, Receive, Scope, Send

WORKERS_ENV = "HEADWATER_SERVE_WORKERS"  # set by `serve --workers N` before it spawns them
CHECK_EVERY_S = 1.0
ESTABLISHED = "01"  # the `st` column of /proc/net/tcp
CLOSE = (b"connection", b"close")
TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))

log = logging.getLogger(__name__)


def established_on(port: int, tables: tuple[Path, ...] = TABLES) -> set[str]:
    """The socket inodes of every established connection whose local port is ``port``."""
    inodes: set[str] = set()
    wanted = f":{port:04X}"
    for table in tables:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == ESTABLISHED and fields[1].endswith(wanted):
                inodes.add(fields[9])
    return inodes


def own_sockets(fd_dir: Path = Path("/proc/self/fd")) -> set[str]:
    """The socket inodes this process holds open."""
    inodes: set[str] = set()
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(fd_dir / name)
        except OSError:
            continue  # closed since the listing
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def excess(port: int, workers: int) -> int:
    """How many more connections to ``port`` this process holds than its share of all of
    them among ``workers`` workers (rounded up), or 0."""
    everyone = established_on(port)
    if workers <= 1 or not everyone:
        return 0
    mine = len(everyone & own_sockets())
    return max(0, mine - math.ceil(len(everyone) / workers))


class Balance:
    """This worker's excess, read again at most every ``CHECK_EVERY_S``; ``take()`` says
    whether the connection answered now should close to give it up."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._excess = 0
        self._next_check = 0.0

    @classmethod
    def from_env(cls) -> Balance:
        """The balance of a worker of ``serve --workers N`` (1 outside one)."""
        try:
            return cls(max(1, int(os.environ.get(WORKERS_ENV, "1"))))
        except ValueError:
            return cls(1)

    def take(self, port: int) -> bool:
        """Whether the request answered now closes its connection (one of the excess)."""
        if self.workers <= 1:
            return False
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + CHECK_EVERY_S
            self._excess = excess(port, self.workers)
            if self._excess:
                log.debug("holding %d connections over this worker's share", self._excess)
        if self._excess <= 0:
            return False
        self._excess -= 1
        return True


class BalanceConnections:
    """ASGI middleware: the answer to a request on one of this worker's connections over
    its share says ``Connection: close`` (uvicorn then closes the connection)."""

    def __init__(self, app: ASGIApp, balance: Balance | None = None) -> None:
        self.app = app
        self._balance = balance or Balance.from_env()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server") if scope["type"] == "http" else None
        if not server or not server[1] or not self._balance.take(server[1]):
            await self.app(scope, receive, send)
            return

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), CLOSE]}
            await send(message)

        await self.app(scope, receive, closing_send)
