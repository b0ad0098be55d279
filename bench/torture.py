"""Torture: every kind of Headwater process on one PostgreSQL manifest, under random faults.

The idea: correctness across processes is only believable when the processes really are
many, really share one manifest and really get stopped and killed at arbitrary moments.
For ``--seconds`` (then on until ``--min-pushes`` pushes were acknowledged and
``--min-faults`` faults injected, at most ``--max-seconds``) this script runs, on a fresh
PostgreSQL database and fresh Redis queues:

- ``--syncs`` loops of ``headwater sync`` (local executor), each relaunched when it exits;
- one ``headwater run`` (the scheduler, Celery executor, ``refresh_every = "2s"``);
- two Celery workers (``headwater worker --pool solo``);
- ``headwater serve --workers 2`` receiving interleaved pushes of ``--objects`` objects
  (upserts with changing ACLs and deletes, versions sent out of order by 6 threads);
- a mutator that creates, edits and deletes files in two filesystem sources whose ACLs
  differ (group ``team-a`` and group ``team-b``);
- a fault injector that every ``--fault-every`` seconds picks a random process (a serve
  worker included) and sends it SIGSTOP (SIGCONT after 0.2 s to 1.5 × ``lease_seconds``)
  or SIGKILL (a killed process is started again).

Then it quiesces (SIGCONT to all, stops everything, one last ``headwater sync`` and
``headwater index``) and checks the oracle: the manifest holds exactly the files on disk
with their last titles; ``headwater reconcile`` finds no drift; every push's highest
acknowledged version is what the manifest holds (never lost, never regressed); a random
sample of searches as each user returns nothing that user may not read. Prints a JSON
report; exits 1 when any check fails. ``tests/correctness/test_torture.py`` runs a short
subset; docs/guarantees.md quotes a full run:

    .venv/bin/python bench/torture.py --seconds 180
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from pgdb import database

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from headwater import Workspace  # noqa: E402

REDIS = os.environ.get("HW_TORTURE_REDIS", "redis://127.0.0.1:6379/11")
USERS = [f"u{i}@acme.test" for i in range(4)]
TEAMS = {"team-a": ["u0@acme.test", "u1@acme.test"], "team-b": ["u2@acme.test", "u3@acme.test"]}
INGEST_KEY = "torture-ingest-0123456789abcdef"
LEASE_SECONDS = 4


def write_configs(tmp: Path, manifest: str, prefix: str) -> tuple[Path, Path]:
    """Two configs over one manifest, state_dir and index: local and Celery executors."""
    common = (
        f'[workspace]\ntenant = "torture"\nstate_dir = "{tmp / "state"}"\n'
        f'[manifest]\nurl = "{manifest}"\n'
        f'[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[embedder]\ntype = "fake"\ndimension = 32\n'
        f"[sync]\nlease_seconds = {LEASE_SECONDS}\nindex_batch_size = 20\n"
        f'[scheduler]\nrefresh_every = "2s"\n'
    )
    sources = "".join(
        f'[[source]]\nid = "{team}"\ntype = "filesystem"\nroot = "{tmp / team}"\n'
        f'access = {{ groups = ["{team}"] }}\n'
        # the driver deletes a quarter of what it touches: the safety fraction (tested
        # elsewhere) would block the final prune, and this run checks convergence
        "prune_max_fraction = 1.0\n"
        for team in TEAMS
    )
    sources += '[[source]]\nid = "inbox"\ntype = "push"\n'
    keys = f'[[api.keys]]\nname = "loader"\nsecret = "{INGEST_KEY}"\nrole = "ingest"\n'
    keys += 'sources = ["inbox"]\n'
    local = tmp / "local.toml"
    local.write_text(common + '[executor]\ntype = "local"\n' + sources + keys, encoding="utf-8")
    celery = tmp / "celery.toml"
    celery.write_text(
        common
        + f'[executor]\ntype = "celery"\nbroker_url = "{REDIS}"\n'
        + f'queues = {{ sync = "{prefix}.sync", index = "{prefix}.index" }}\n'
        + sources
        + keys,
        encoding="utf-8",
    )
    return local, celery


@dataclass
class Managed:
    """One long-lived process kind: started again whenever it exits or is killed."""

    name: str
    argv: list[str]
    log: Path
    restart: bool = True
    proc: subprocess.Popen[bytes] | None = None
    stopped: set[int] = field(default_factory=set)
    starts: int = 0

    def start(self, env: dict[str, str]) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.starts += 1

    def pids(self) -> list[int]:
        """The process and its children (serve's workers, a prefork pool)."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        pids = [self.proc.pid]
        try:
            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
            pids += [int(p) for p in children.split()]
        except OSError:
            pass
        return pids

    def signal_group(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)


@dataclass
class Ledger:
    """What the drivers did and what was acknowledged."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    faults: dict[str, int] = field(default_factory=dict)
    pushes_sent: int = 0
    pushes_acked: int = 0
    pushes_refused: int = 0  # 409: an older version than the manifest's (expected)
    push_errors: list[str] = field(default_factory=list)  # 5xx: never acceptable
    acked: dict[str, tuple[int, str, tuple[str, ...]]] = field(default_factory=dict)
    sent: dict[tuple[str, int], tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    mutations: int = 0

    def fault(self, kind: str) -> None:
        with self.lock:
            self.faults[kind] = self.faults.get(kind, 0) + 1


class Torture:
    def __init__(self, tmp: Path, args: argparse.Namespace, manifest: str) -> None:
        self.tmp, self.args = tmp, args
        self.rng = random.Random(args.seed)
        self.local, self.celery = write_configs(tmp, manifest, uuid.uuid4().hex[:10])
        for team in TEAMS:
            (tmp / team).mkdir()
        self.port = free_port()
        self.env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"}
        self.ledger = Ledger()
        self.stop = threading.Event()
        self.versions: dict[str, int] = {}
        self.files: dict[str, int] = {}  # "team/name.md" -> its version
        hw = [sys.executable, "-m", "headwater"]
        logs = tmp / "logs"
        logs.mkdir()
        self.procs = [
            Managed(
                f"sync{i}", [*hw, "-c", str(self.local), "sync", "--json"], logs / f"sync{i}.log"
            )
            for i in range(args.syncs)
        ]
        self.procs.append(Managed("run", [*hw, "-c", str(self.celery), "run"], logs / "run.log"))
        self.procs += [
            Managed(
                f"worker{i}",
                [
                    *hw,
                    "-c",
                    str(self.celery),
                    "worker",
                    "--pool",
                    "solo",
                    "--queues",
                    "sync,index",
                    "--hostname",
                    f"t{i}-{uuid.uuid4().hex[:6]}@%h",
                    "--loglevel",
                    "WARNING",
                ],
                logs / f"worker{i}.log",
            )
            for i in range(2)
        ]
        self.serve = Managed(
            "serve",
            [*hw, "-c", str(self.local), "serve", "--port", str(self.port), "--workers", "2"],
            logs / "serve.log",
        )
        self.procs.append(self.serve)

    # -- drivers -------------------------------------------------------------------------

    def mutate(self) -> None:
        """Create, edit and delete files of both filesystem sources."""
        while not self.stop.wait(self.rng.uniform(0.02, 0.1)):
            team = self.rng.choice(list(TEAMS))
            name = f"{team}/f{self.rng.randrange(self.args.files)}.md"
            path = self.tmp / name
            if name in self.files and self.rng.random() < 0.25:
                path.unlink()
                del self.files[name]
            else:
                version = self.files.get(name, 0) + 1
                body = f"# {name} v{version}\n\nword{version} {team} torture {name}\n"
                staged = path.with_suffix(".tmp")
                staged.write_text(body, encoding="utf-8")
                staged.replace(path)  # a reader sees the old or the new file, never half
                self.files[name] = version
            self.ledger.mutations += 1

    def push(self, worker: int) -> None:
        rng = random.Random(self.args.seed * 100 + worker)
        headers = {"Authorization": f"Bearer {INGEST_KEY}"}
        base = f"http://127.0.0.1:{self.port}/v1/sources/inbox/documents"
        with httpx.Client(timeout=10.0, headers=headers) as client:
            while not self.stop.is_set():
                oid = f"obj{rng.randrange(self.args.objects)}"
                with self.ledger.lock:
                    version = self.versions.get(oid, 0) + 1
                    self.versions[oid] = version
                    kind = "delete" if rng.random() < 0.2 else "upsert"
                    acl = tuple(sorted(rng.sample(USERS, rng.randint(1, 2))))
                    self.ledger.sent[(oid, version)] = (kind, acl)
                    self.ledger.pushes_sent += 1
                time.sleep(rng.uniform(0.0, 0.05))  # interleave with the next version
                try:
                    if kind == "delete":
                        response = client.delete(f"{base}/{oid}", params={"version": version})
                    else:
                        body = {
                            "version": version,
                            "title": f"push {oid} v{version}",
                            "text": f"pushword {oid} v{version}",
                            "access": {"users": list(acl)},
                        }
                        response = client.put(f"{base}/{oid}", json=body)
                except httpx.HTTPError:
                    continue  # not acknowledged: the server was stopped or killed
                self.record(oid, version, kind, acl, response)

    def record(
        self, oid: str, version: int, kind: str, acl: tuple[str, ...], r: httpx.Response
    ) -> None:
        with self.ledger.lock:
            if r.status_code < 300:
                self.ledger.pushes_acked += 1
                if version > self.ledger.acked.get(oid, (0, "", ()))[0]:
                    self.ledger.acked[oid] = (version, kind, acl)
            elif r.status_code == 409:
                self.ledger.pushes_refused += 1
            elif r.status_code >= 500 and r.status_code != 503:
                self.ledger.push_errors.append(
                    f"{kind} {oid} v{version}: {r.status_code} {r.text[:200]}"
                )

    def inject(self) -> None:
        while not self.stop.wait(self.args.fault_every):
            target = self.rng.choice(self.procs)
            pids = target.pids()
            if not pids:
                continue
            pid = self.rng.choice(pids)
            if self.rng.random() < 0.6:
                self.ledger.fault("SIGSTOP")
                os.kill(pid, signal.SIGSTOP)
                delay = self.rng.uniform(0.2, 1.5 * LEASE_SECONDS)
                threading.Timer(delay, self.resume, (pid,)).start()
            else:
                self.ledger.fault("SIGKILL")
                os.kill(pid, signal.SIGKILL)

    @staticmethod
    def resume(pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)

    def supervise(self) -> None:
        while not self.stop.wait(0.2):
            for managed in self.procs:
                if managed.proc is None or managed.proc.poll() is not None:
                    managed.start(self.env)

    # -- the run -------------------------------------------------------------------------

    def run(self) -> dict[str, object]:
        self.serve.start(self.env)
        wait_for(lambda: answers(self.port), 90, f"serve did not answer; see {self.serve.log}")
        for managed in self.procs:
            if managed.proc is None:
                managed.start(self.env)
        threads = [threading.Thread(target=self.mutate), threading.Thread(target=self.inject),
                   threading.Thread(target=self.supervise)]  # fmt: skip
        threads += [threading.Thread(target=self.push, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        started = time.monotonic()
        self.stop.wait(self.args.seconds)
        self.wait_for_enough(started)
        self.stop.set()
        for thread in threads:
            thread.join()
        for managed in self.procs:  # quiesce: wake everything, then stop everything
            managed.signal_group(signal.SIGCONT)
            managed.signal_group(signal.SIGTERM)
        for managed in self.procs:
            if managed.proc is not None:
                try:
                    managed.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    managed.signal_group(signal.SIGKILL)
                    managed.proc.wait()
        report: dict[str, object] = {
            "seconds": round(time.monotonic() - started, 1),
            "processes": {m.name: m.starts for m in self.procs},
            "faults": dict(self.ledger.faults),
            "faults_total": sum(self.ledger.faults.values()),
            "file_mutations": self.ledger.mutations,
            "pushes_sent": self.ledger.pushes_sent,
            "pushes_acknowledged": self.ledger.pushes_acked,
            "pushes_refused_409": self.ledger.pushes_refused,
            "push_server_errors": self.ledger.push_errors[:20],
        }
        report.update(self.settle())
        report.update(self.oracle())
        return report

    def wait_for_enough(self, started: float) -> None:
        """Past ``--seconds``, go on until the run saw ``--min-pushes`` acknowledged pushes
        and ``--min-faults`` faults (a loaded machine is slower, not less faulted), for at
        most ``--max-seconds`` in all."""

        def enough() -> bool:
            with self.ledger.lock:
                return (
                    self.ledger.pushes_acked >= self.args.min_pushes
                    and sum(self.ledger.faults.values()) >= self.args.min_faults
                )

        limit = started + max(self.args.max_seconds, self.args.seconds)
        while not enough() and time.monotonic() < limit:
            self.stop.wait(0.2)

    def settle(self) -> dict[str, object]:
        """Syncs with nothing else running (one that may resume a killed run, then a fresh
        one), an index and a reconcile; how long the takeover took."""
        hw = [sys.executable, "-m", "headwater", "-c", str(self.local)]
        started = time.monotonic()
        bound = 2 * LEASE_SECONDS + 10
        while True:
            done = subprocess.run(
                [*hw, "sync", "--json"], env=self.env, capture_output=True, text=True
            )
            if done.returncode == 0:
                break
            if time.monotonic() - started > bound + 60:
                raise RuntimeError(f"the final sync kept failing:\n{done.stdout}\n{done.stderr}")
            time.sleep(0.5)
        final_sync_s = time.monotonic() - started
        # The first sync may resume a run a fault killed: it finishes that run's window,
        # from its checkpoint, and sees no change made after the window closed. One more
        # (fresh) run sees the sources as they are now; a lost change would survive it.
        subprocess.run([*hw, "sync", "--json"], env=self.env, check=True, capture_output=True)
        subprocess.run([*hw, "index", "--json"], env=self.env, check=True, capture_output=True)
        reconcile = subprocess.run(
            [*hw, "reconcile", "--json"], env=self.env, capture_output=True, text=True
        )
        return {
            "final_sync_s": round(final_sync_s, 1),
            "reconcile_exit": reconcile.returncode,
            "reconcile": json.loads(reconcile.stdout)
            if reconcile.stdout.strip()
            else reconcile.stderr,
        }

    def oracle(self) -> dict[str, object]:
        problems: list[str] = []
        leaks: list[str] = []
        with Workspace.open(self.local) as ws:
            manifest = ws.manifest
            for team in TEAMS:
                on_disk = {
                    n.split("/", 1)[1]: v for n, v in self.files.items() if n.startswith(team)
                }
                held = {d.object_id: d for d in documents_of(ws, team)}
                if set(held) != set(on_disk):
                    problems.append(
                        f"{team}: manifest {sorted(set(held) ^ set(on_disk))[:10]} differ from disk"
                    )
                for oid, version in on_disk.items():
                    record = held.get(oid)
                    if record is not None and record.title != f"{team}/{oid} v{version}":
                        problems.append(
                            f"{team}/{oid}: title {record.title!r}, disk has v{version}"
                        )
            lost = 0
            for oid, (version, kind, _acl) in self.ledger.acked.items():
                record = manifest.document_by_object("inbox", oid)
                held_seq = record.sequence if record is not None else None
                if held_seq is None or held_seq < version:
                    lost += 1
                    problems.append(
                        f"push {oid}: acknowledged v{version} ({kind}), manifest holds {held_seq}"
                    )
                    continue
                assert record is not None
                kind_held, acl_held = self.ledger.sent[(oid, held_seq)]
                if (record.state == "active") != (kind_held == "upsert"):
                    problems.append(
                        f"push {oid}: v{held_seq} was a {kind_held}, manifest says {record.state}"
                    )
                elif kind_held == "upsert" and set(record.acl) != {f"user:{u}" for u in acl_held}:
                    problems.append(
                        f"push {oid}: v{held_seq} ACL {acl_held}, manifest {record.acl}"
                    )
            searches = 0
            for user in USERS:
                groups = [t for t, members in TEAMS.items() if user in members]
                for word in ("torture", "pushword", *self.rng.sample(range(1, 30), 5)):
                    query = word if isinstance(word, str) else f"word{word}"
                    for hit in ws.search(query, user=user, groups=groups, k=50, mode="keyword"):
                        searches += 1
                        record = manifest.document(hit.document_id)
                        if record is None or record.state != "active":
                            leaks.append(f"{user} got {hit.locator}: not live in the manifest")
                        elif hit.source in TEAMS and hit.source not in groups:
                            leaks.append(f"{user} got {hit.locator} of {hit.source}")
                        elif hit.source == "inbox" and f"user:{user}" not in record.acl:
                            leaks.append(f"{user} got pushed {hit.locator}, ACL {record.acl}")
        return {"lost_acknowledged_pushes": lost, "search_hits_checked": searches,
                "leaks": len(leaks), "leak_samples": leaks[:10], "problems": problems[:30],
                "problems_total": len(problems)}  # fmt: skip


def documents_of(ws: Workspace, source: str) -> list:  # type: ignore[type-arg]
    out, after = [], ""
    while True:
        page = ws.manifest.documents_after(after, 500)
        if not page:
            return [d for d in out if d.source_id == source and d.state == "active"]
        out += page
        after = page[-1].document_id


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def wait_for(condition, seconds: float, message: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(message)
        time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--syncs", type=int, default=3)
    parser.add_argument("--objects", type=int, default=30)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--fault-every", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--min-pushes",
        type=int,
        default=0,
        help="Run past --seconds until this many pushes were acknowledged.",
    )
    parser.add_argument(
        "--min-faults",
        type=int,
        default=0,
        help="Run past --seconds until this many faults were injected.",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=300,
        help="The most the faulted phase may run, --min-* or not.",
    )
    parser.add_argument("--keep", action="store_true", help="Keep the temporary directory.")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hw-torture-"))
    with database("hw_torture") as manifest:
        report = Torture(tmp, args, manifest).run()
    ok = (
        report["lost_acknowledged_pushes"] == 0 and report["leaks"] == 0
        and report["problems_total"] == 0 and report["reconcile_exit"] == 0
        and not report["push_server_errors"]
    )  # fmt: skip
    report["ok"] = ok
    report["logs"] = str(tmp / "logs") if args.keep or not ok else None
    print(json.dumps(report, indent=2, default=str))
    if ok and not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
