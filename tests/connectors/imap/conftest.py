"""Fixtures for the imap connector: a real Dovecot on 127.0.0.1, started once per session.

Dovecot runs in the foreground from a minimal config in a temporary directory (plain
IMAP, cleartext login allowed on loopback, passwd-file accounts, Maildir storage); the
mail processes run as ``nobody``, so the directory is world-traversable.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from imap_support import PASSWORD, Account, Dovecot

from ports import free_port

DOVECOT = "/usr/sbin/dovecot"


def _config(root: Path, port: int) -> str:
    return f"""
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = dovecot
default_login_user = dovenull
first_valid_uid = 0
mail_location = maildir:{root}/mail/%u
auth_failure_delay = 0
passdb {{
  driver = static
  args = password={PASSWORD}
}}
userdb {{
  driver = static
  args = uid=nobody gid=nogroup home={root}/mail/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
"""


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Dovecot]:
    if shutil.which(DOVECOT) is None:
        raise RuntimeError(f"{DOVECOT} is missing; install it: apt-get install -y dovecot-imapd")
    root = Path(tempfile.mkdtemp(prefix="hw-dovecot-"))
    root.chmod(0o755)
    for name in ("run", "state", "mail"):
        (root / name).mkdir()
    (root / "mail").chmod(0o777)
    port = free_port()
    (root / "dovecot.conf").write_text(_config(root, port))
    proc = subprocess.Popen(
        [DOVECOT, "-F", "-c", str(root / "dovecot.conf")],
        stdout=subprocess.DEVNULL,
        stderr=(root / "stderr.log").open("w"),
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                log = (root / "stderr.log").read_text()
                raise RuntimeError(f"dovecot did not start: {log}") from None
            time.sleep(0.05)
    yield Dovecot(port=port)
    proc.terminate()
    proc.wait(timeout=15)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def account(dovecot: Dovecot) -> Account:
    return dovecot.account()
