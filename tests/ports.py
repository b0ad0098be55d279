"""Ports for the servers tests start, taken outside the kernel's ephemeral range.

Binding port 0 and closing the socket yields a port from the ephemeral range, the range the
kernel also hands every outgoing connection: between that probe and the server's own bind,
a client socket of any test running beside it may take the port, and the server fails with
"Address already in use". The ports handed out here lie below the ephemeral range, in a
slice of their own per pytest-xdist worker, so nothing but this module chooses them; each
is probed before it is returned, which skips ports that some service already listens on.
"""

from __future__ import annotations

import itertools
import os
import random
import socket
from pathlib import Path

_LOWEST = 10_000
_SLICES = 16


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _worker_slice() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) % _SLICES if worker.isdigit() else 0
    width = (_ephemeral_low() - _LOWEST) // _SLICES
    return range(_LOWEST + index * width, _LOWEST + (index + 1) * width)


def _candidates() -> itertools.cycle[int]:
    ports = list(_worker_slice())
    start = random.Random(os.getpid()).randrange(len(ports))
    return itertools.cycle(ports[start:] + ports[:start])


_CANDIDATES = _candidates()


def _is_free(port: int) -> bool:
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                return False
    return True


def free_port() -> int:
    """A port on 127.0.0.1 that no one listens on and no outgoing connection will take."""
    for port in _CANDIDATES:
        if _is_free(port):
            return port
    raise AssertionError("unreachable: the candidate ports cycle forever")
