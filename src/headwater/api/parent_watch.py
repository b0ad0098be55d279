"""A ``serve --workers N`` worker ends when its master does.

uvicorn's master process spawns the workers and restarts the ones that die. When the
master itself is killed with SIGKILL (an OOM kill, a supervisor's last resort), nothing
told the workers: they went on answering on the master's port, re-parented to PID 1,
unsupervised, never restarted, and outliving every restart of the service beside it.
Each worker now asks the kernel for SIGTERM when its parent dies (Linux
``PR_SET_PDEATHSIG``; uvicorn stops a worker gracefully on SIGTERM, finishing the
requests in flight), then checks that its parent is still the master, for a master that
died before the request was made. Elsewhere a thread polls the parent's pid.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import sys
import threading

MASTER_ENV = "HEADWATER_SERVE_MASTER_PID"  # set by `serve` before it spawns the workers
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
POLL_SECONDS = 1.0

log = logging.getLogger(__name__)


def end_with_master() -> None:
    """In a worker: receive SIGTERM once the master named in ``$HEADWATER_SERVE_MASTER_PID``
    is gone; a no-op in a process ``serve`` did not spawn."""
    master = os.environ.get(MASTER_ENV, "")
    if not master.isdigit() or int(master) == os.getpid():
        return
    if not _ask_kernel_for_sigterm():
        threading.Thread(
            target=_poll_parent, args=(int(master),), name="headwater-parent-watch", daemon=True
        ).start()
    if os.getppid() != int(master):  # the master died before the request took effect
        log.error("serve worker %d: the master process %s is gone; exiting", os.getpid(), master)
        os._exit(0)


def _ask_kernel_for_sigterm() -> bool:
    """Linux's parent-death signal; False where the platform has none."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return bool(libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0)


def _poll_parent(master: int) -> None:
    """Send this process SIGTERM once its parent is no longer ``master``."""
    never = threading.Event()
    while not never.wait(POLL_SECONDS):
        if os.getppid() != master:
            os.kill(os.getpid(), signal.SIGTERM)
            return
