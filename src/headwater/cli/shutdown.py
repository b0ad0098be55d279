"""Ending the ``headwater`` process quickly once a command is done.

The idea: after the command has printed its result and closed its workspace, Python's
own teardown (deallocating every module: sqlalchemy, pydantic, numpy, onnxruntime… one
object at a time) still costs ~0.1 s of CPU, 10–20% of a ``search`` or ``status`` from
the shell. Nothing in it matters to Headwater: the manifest and indexes were closed by
the command, every write is committed. So ``exit_now`` does what must happen at exit
(the ``atexit`` handlers: logging's flush and close of ``--log-file``, temporary
directories, coverage, test probes; then stdout and stderr flushed) and leaves with
``os._exit``. It keeps Python's normal exit whenever that could differ: another
non-daemon thread is still running (Python would wait for it), the exit status is not
an integer, or flushing fails (a closed pipe: Python reports it and exits 120).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading


def exit_now(code: object) -> None:
    """End the process with ``code`` (``SystemExit.code``) skipping the interpreter's
    teardown; returns (and the caller exits normally) when that would not be the same."""
    status = 0 if code is None else code
    if not isinstance(status, int) or isinstance(status, bool):
        return
    main = threading.main_thread()
    if any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate()):
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(status & 0xFF)
