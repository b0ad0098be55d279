"""The content store is shared by threads (``serve`` answers pushes on several, a sync
indexes beside its reader): puts and gets from many threads at once must each round-trip.

A zstd context used by two threads at once corrupts its output or crashes the process
(the torture bench saw ``ZstdError: Src size is incorrect`` answered as HTTP 500), so the
check runs in a child process: a crash there fails this test instead of the test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import hashlib, sys, threading
    from pathlib import Path
    from headwater.manifest.content import FolderContentStore

    store = FolderContentStore(Path(sys.argv[1]))
    errors = []

    def work(n):
        try:
            for i in range(400):
                text = f"thread {n} text {i} " * (1 + (i * 37) % 900)
                checksum = hashlib.sha256(text.encode()).hexdigest()
                store.put(checksum, text)
                assert store.get(checksum) == text
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("errors", len(errors), errors[:1])
    """
)


def test_puts_and_gets_from_many_threads_round_trip(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "content")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "errors 0 []", done.stdout
