"""Rules across sections, checked after each section is valid on its own.

A Celery executor needs a broker and a server manifest; a NATS executor a NATS URL, a
JetStream stream name and a subject prefix that no ``[events]`` stream overlaps, and a
server manifest; an ingest key's ``sources`` names configured push sources. Each rule
returns its problems as lines naming the key path, so ``load_config`` reports them with
every other problem at once.
"""

from __future__ import annotations

from headwater.config.events import NATS_URL, STREAM_NAME, SUBJECT_TOKENS
from headwater.config.sections import HeadwaterConfig

BROKER_SCHEMES = ("redis://", "rediss://", "amqp://", "amqps://", "pyamqp://")


def executor_problems(config: HeadwaterConfig) -> list[str]:
    """Config errors of ``[executor]`` (an empty list when it is valid).

    Celery workers on several hosts share the manifest, so it must be a server database.
    """
    executor = config.executor
    if executor.type == "nats":
        return _nats_problems(config) + _server_manifest(config, "NATS")
    if executor.type != "celery":
        return []
    problems: list[str] = []
    broker = executor.broker_url
    if not broker:
        problems.append(
            "executor.broker_url: required with type = 'celery'; "
            "set e.g. 'redis://host:6379/0' or 'amqp://user:pass@host:5672//'"
        )
    elif not broker.startswith(BROKER_SCHEMES):
        problems.append(
            f"executor.broker_url: {broker.split('@')[-1]!r} is not a Redis or RabbitMQ URL; "
            "expected redis://… or amqp://…"
        )
    problems.extend(_server_manifest(config, "Celery"))
    if executor.queues.sync == executor.queues.index:
        problems.append(
            f"executor.queues: sync and index are both {executor.queues.sync!r}; "
            "give them different names so index batches never wait behind source runs"
        )
    return problems


def _server_manifest(config: HeadwaterConfig, kind: str) -> list[str]:
    """Workers on several hosts share the manifest: it must be a server database."""
    url = config.manifest.url
    if url is None or url.startswith("sqlite"):
        return [
            f"manifest.url: {url or 'the default SQLite file'!r} cannot be shared by {kind} "
            "workers; expected a PostgreSQL URL, e.g. "
            "'postgresql+psycopg://user@host/headwater' (or set executor.type = 'local')"
        ]
    return []


def _nats_problems(config: HeadwaterConfig) -> list[str]:
    """``[executor] type = "nats"``: a NATS URL, a stream name, a prefix of its own."""
    executor, problems = config.executor, []
    if executor.url is not None and not executor.url.startswith(("nats://", "tls://")):
        problems.append(
            f"executor.url: {executor.url.split('@')[-1]!r} is not a NATS server address; "
            f"expected nats://host:port (default {NATS_URL})"
        )
    if not STREAM_NAME.match(executor.stream):
        problems.append(
            f"executor.stream: {executor.stream!r} is not a JetStream stream name; expected "
            "letters, digits, '_' or '-' (no dots, spaces or wildcards), e.g. HEADWATER_RUNS"
        )
    if not SUBJECT_TOKENS.match(executor.subject_prefix):
        problems.append(
            f"executor.subject_prefix: {executor.subject_prefix!r} is not a NATS subject "
            "prefix; expected tokens of letters, digits, '_' or '-' joined by dots, e.g. "
            "headwater_runs"
        )
    events = config.events
    if events is not None and events.type == "nats":
        ours, theirs = executor.subject_prefix, events.subject_prefix
        if f"{ours}.".startswith(f"{theirs}.") or f"{theirs}.".startswith(f"{ours}."):
            problems.append(
                f"executor.subject_prefix: {ours!r} overlaps [events] subject_prefix "
                f"{theirs!r}; JetStream refuses two streams over one subject, so give the "
                "work queue a prefix of its own, e.g. headwater_runs"
            )
        if events.stream == executor.stream:
            problems.append(
                f"executor.stream: {executor.stream!r} is also the [events] stream; a work "
                "queue needs a stream of its own (retention = workqueue), e.g. HEADWATER_RUNS"
            )
    return problems


def api_key_problems(config: HeadwaterConfig) -> list[str]:
    """``sources`` scopes an ingest key, and names configured push sources only."""
    push = {s.id for s in config.source if s.type == "push"}
    problems = []
    for i, key in enumerate(config.api.keys):
        where = f"api.keys[{i}] (name={key.name}).sources"
        if key.sources and key.role != "ingest":
            problems.append(
                f"{where}: only an ingest key is scoped to sources (role {key.role!r} is not); "
                "remove `sources` from this key"
            )
            continue
        for source_id in key.sources:
            if source_id not in push:
                problems.append(
                    f"{where}: {source_id!r} is not a configured push source; expected one of: "
                    f"{', '.join(sorted(push)) or 'none'}"
                )
    return problems


def executor_warnings(config: HeadwaterConfig) -> list[str]:
    """What works, but only in a narrow deployment: the embedded ``sqlite`` index is a file
    on one host, allowed under Celery only when every worker runs there (a warning, not an
    error; the dispatcher and ``headwater workers`` print it)."""
    kind = {"celery": "Celery", "nats": "NATS"}.get(config.executor.type)
    if kind is None:
        return []
    local = [i.name for i in config.index if i.type == "sqlite"] or (
        ["main"] if not config.index else []
    )
    return [
        f"index {name!r} is the embedded sqlite index: a file on this host, so every "
        f"{kind} worker must run on this one host; use a Qdrant server index to spread "
        "workers over several hosts."
        for name in local
    ]
