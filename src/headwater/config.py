"""``headwater.toml``: read, substitute ``${ENV}``, validate everything, report all at once.

Validation happens in two passes that both collect problems instead of stopping at the
first: the common shape (workspace, manifest, embedder, indexes, sources' shared keys),
then each source's and index's own options against the plugin's ``Options`` model. Every
problem names its key path. Secrets are ``SecretStr`` in the plugin models, so neither
logs nor ``--json`` output ever show them.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from headwater.durations import MIN_INTERVAL, check_duration
from headwater.durations import parse_duration as parse_duration  # re-exported
from headwater.errors import ConfigError
from headwater.pipeline.embed.registry import available_embedder_types
from headwater.pipeline.parse import SUPPORTED_MEDIA_TYPES, ParseOptions
from headwater.sizes import parse_size
from headwater.types import Access, normalize_identity

ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
COMMON_SOURCE_KEYS = {
    "id",
    "type",
    "access",
    "refresh_every",
    "prune_every",
    "permissions_every",
    "prune_max_fraction",
    "batch_size",
    "parse",
}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkspaceSection(Strict):
    tenant: str = Field(min_length=1)
    state_dir: str = ".headwater"


class ManifestSection(Strict):
    url: str | None = None


class AccessSection(Strict):
    users: list[str] = []
    groups: list[str] = []
    public: bool = False

    @field_validator("users", "groups")
    @classmethod
    def _identities(cls, values: list[str], info: ValidationInfo) -> list[str]:
        kind: Literal["user", "group"] = "user" if info.field_name == "users" else "group"
        for n, value in enumerate(values):
            try:
                normalize_identity(value, kind)
            except ConfigError as exc:
                raise ValueError(f"[{n}]: {exc}") from exc
        return values

    def to_access(self) -> Access:
        return Access(
            users=tuple(sorted(normalize_identity(u, "user") for u in self.users)),
            groups=tuple(sorted(self.groups)),
            public=self.public,
        )


class ParseSection(Strict):
    """``[parse]`` (workspace) or a source's ``parse``: what its files are, by extension.

    ``text_extensions`` are read as plain text; ``media_types`` gives an extension the
    media type of a supported format (``".tpl" = "text/html"``). A source's lists add to
    the workspace's, its mapping overrides the workspace's per extension.
    """

    text_extensions: list[str] = []
    media_types: dict[str, str] = {}

    @field_validator("text_extensions")
    @classmethod
    def _extensions(cls, values: list[str]) -> list[str]:
        return [_extension(value) for value in values]

    @field_validator("media_types")
    @classmethod
    def _media_types(cls, values: dict[str, str]) -> dict[str, str]:
        checked: dict[str, str] = {}
        for key, value in values.items():
            mime = value.split(";")[0].strip().lower()
            if mime not in SUPPORTED_MEDIA_TYPES:
                raise ValueError(
                    f"{key!r} = {value!r}: not the media type of a supported format; "
                    f"expected one of {', '.join(sorted(SUPPORTED_MEDIA_TYPES))}"
                )
            checked[_extension(key)] = value
        return checked

    def options(self, override: ParseSection | None = None) -> ParseOptions:
        """This section's options, with a source's ``override`` laid over them."""
        extensions = set(self.text_extensions)
        media_types = dict(self.media_types)
        if override is not None:
            extensions |= set(override.text_extensions)
            media_types |= override.media_types
        return ParseOptions(text_extensions=frozenset(extensions), media_types=media_types)


def _extension(value: str) -> str:
    if not re.fullmatch(r"\.[A-Za-z0-9_+-][A-Za-z0-9_.+-]*", value):
        raise ValueError(
            f"{value!r} is not a file extension; expected a dot and letters, e.g. '.conf'"
        )
    return value.lower()


class SourceSection(BaseModel):
    """The keys every source has; the rest are the connector's own options."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    type: str
    access: AccessSection | None = None
    refresh_every: str | None = None
    prune_every: str | None = None
    permissions_every: str | None = None  # `headwater sync --permissions` interval
    prune_max_fraction: float = Field(default=0.2, ge=0.0, le=1.0)
    batch_size: int = Field(default=64, ge=1, le=10_000)
    parse: ParseSection | None = None  # laid over the workspace's [parse]

    @field_validator("refresh_every", "prune_every", "permissions_every")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        return None if value is None else _check_interval(value)

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class IndexSection(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
    type: str
    # How long a switched-away generation is kept for rollback before it is retired.
    keep_previous_for: str = "7d"

    @field_validator("keep_previous_for")
    @classmethod
    def _duration(cls, value: str) -> str:
        return _check_duration(value)

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class EmbedderSection(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    # An embedder type of the registry (headwater.pipeline.embed.registry).
    type: str = "local"
    # How the local model runs; part of its model id, so a change means re-indexing.
    runtime: Literal["onnx-int8", "onnx", "torch"] = "onnx-int8"
    # Cap of the embedding cache (bytes, or "2GB"); housekeeping evicts the least
    # recently used vectors above it. None: no cap. Not an embedder option.
    cache_max_bytes: int | None = Field(default=None, ge=0)

    @field_validator("cache_max_bytes", mode="before")
    @classmethod
    def _size(cls, value: object) -> object:
        return parse_size(value) if isinstance(value, str) else value

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        known = available_embedder_types()
        if value not in known:
            raise ValueError(f"embedder type {value!r} is not installed; expected one of {known}")
        return value

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class ChunkerSection(Strict):
    max_tokens: int | None = Field(default=None, ge=16, le=8192)
    max_document_chars: int = Field(default=5_000_000, ge=1)


class SyncSection(Strict):
    attempts: int = Field(default=3, ge=1, le=20)
    run_attempts: int = Field(default=3, ge=1, le=20)
    tombstone_retention_days: int = Field(default=30, ge=0)
    index_batch_size: int = Field(default=32, ge=1, le=4096)
    lease_seconds: int = Field(default=60, ge=1, le=86_400)


def _check_duration(value: str) -> str:
    """A retention (``keep_runs_for``, ``keep_previous_for``): 0s to ten years."""
    check_duration(value)
    return value


def _check_interval(value: str) -> str:
    """An interval between runs or retries: 1s to ten years ("0s" would spin)."""
    check_duration(value, MIN_INTERVAL)
    return value


class SchedulerSection(Strict):
    """``[scheduler]``: ``headwater run``'s concurrency, backoff and retention."""

    max_concurrent: int = Field(default=2, ge=1, le=64)
    failure_backoff: str = "1m"
    backoff_max: str = "1h"
    keep_runs_for: str = "30d"
    refresh_every: str = "1h"

    @field_validator("failure_backoff", "backoff_max", "refresh_every")
    @classmethod
    def _interval(cls, value: str) -> str:
        return _check_interval(value)

    @field_validator("keep_runs_for")
    @classmethod
    def _duration(cls, value: str) -> str:
        return _check_duration(value)


class ApiPrincipals(Strict):
    users: list[str] = []
    groups: list[str] = []


class ApiKeySection(Strict):
    """``[[api.keys]]``: one bearer key of ``headwater serve`` (see docs/api.md)."""

    name: str = Field(min_length=1)
    secret: SecretStr
    role: Literal["search", "ingest", "admin"]
    principals: ApiPrincipals | None = None
    assert_principals: bool = False
    sources: list[str] = []  # the push sources an ingest key may write to (none by default)

    @field_validator("secret")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value()) < 16:
            raise ValueError("an API key secret needs at least 16 characters; use a random one")
        return value


class ApiSection(Strict):
    """``[api]``: the HTTP service's keys, and the largest push request body it reads."""

    keys: list[ApiKeySection] = []
    max_push_bytes: int = Field(default=64 * 1024 * 1024, ge=1024, le=2**31)

    @field_validator("max_push_bytes", mode="before")
    @classmethod
    def _size(cls, value: object) -> object:
        return parse_size(value) if isinstance(value, str) else value


class ExecutorQueues(Strict):
    sync: str = Field(default="headwater.sync", min_length=1)
    index: str = Field(default="headwater.index", min_length=1)


class ExecutorSection(Strict):
    """``[executor]``: where runs execute. ``local`` (this process) or ``celery`` workers."""

    type: Literal["local", "celery"] = "local"
    broker_url: str | None = None
    result_backend: str | None = None
    queues: ExecutorQueues = ExecutorQueues()
    visibility_timeout: int = Field(default=3600, ge=1, le=7 * 86_400)
    claim_seconds: int = Field(default=300, ge=1, le=86_400)
    max_retries: int = Field(default=3, ge=0, le=100)
    index_tasks: int = Field(default=4, ge=1, le=1024)


class HeadwaterConfig(Strict):
    workspace: WorkspaceSection
    manifest: ManifestSection = ManifestSection()
    embedder: EmbedderSection = EmbedderSection()
    chunker: ChunkerSection = ChunkerSection()
    parse: ParseSection = ParseSection()
    sync: SyncSection = SyncSection()
    scheduler: SchedulerSection = SchedulerSection()
    api: ApiSection = ApiSection()
    executor: ExecutorSection = ExecutorSection()
    index: list[IndexSection] = []
    source: list[SourceSection] = []

    def source_by_id(self, source_id: str) -> SourceSection:
        for section in self.source:
            if section.id == source_id:
                return section
        known = ", ".join(s.id for s in self.source) or "none"
        raise ConfigError(
            f"source {source_id!r} is not configured; expected one of: {known}. "
            "Check the id or add a [[source]] table; to delete the documents of a source "
            "removed from the config, run `headwater source remove ID`."
        )


BROKER_SCHEMES = ("redis://", "rediss://", "amqp://", "amqps://", "pyamqp://")


def executor_problems(config: HeadwaterConfig) -> list[str]:
    """Config errors of ``[executor]`` (an empty list when it is valid).

    Celery workers on several hosts share the manifest, so it must be a server database.
    """
    executor = config.executor
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
    url = config.manifest.url
    if url is None or url.startswith("sqlite"):
        problems.append(
            f"manifest.url: {url or 'the default SQLite file'!r} cannot be shared by Celery "
            "workers; expected a PostgreSQL URL, e.g. "
            "'postgresql+psycopg://user@host/headwater' (or set executor.type = 'local')"
        )
    if executor.queues.sync == executor.queues.index:
        problems.append(
            f"executor.queues: sync and index are both {executor.queues.sync!r}; "
            "give them different names so index batches never wait behind source runs"
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


class LoadedConfig(BaseModel):
    """A validated config plus where it came from and the parsed plugin options."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    path: Path
    root: Path
    config: HeadwaterConfig
    source_options: dict[str, Any]
    index_options: dict[str, Any]

    @property
    def state_dir(self) -> Path:
        return resolve_path(self.root, self.config.workspace.state_dir)

    @property
    def manifest_url(self) -> str:
        url = self.config.manifest.url
        if url is None:
            return f"sqlite:///{self.state_dir / 'manifest.db'}"
        if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
            relative = url[len("sqlite:///") :]
            if relative and relative != ":memory:":
                return f"sqlite:///{resolve_path(self.root, relative)}"
        return url


def resolve_path(root: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (root / path).resolve()


def _substitute(value: Any, path: str, missing: list[str]) -> Any:
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in os.environ:
                missing.append(
                    f"{path}: environment variable {name} is not set; "
                    f"export {name} or remove the ${{{name}}} reference"
                )
                return ""
            return os.environ[name]

        return ENV_REFERENCE.sub(replace, value)
    if isinstance(value, dict):
        return {k: _substitute(v, f"{path}.{k}" if path else k, missing) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, f"{path}[{i}]", missing) for i, v in enumerate(value)]
    return value


UNSET = ": environment variable "
_ANNOTATION = re.compile(r" \((?:id|name)=[^)]*\)")  # "source[1] (id=w)" names source[1]


def _without_echoes(problems: list[str]) -> list[str]:
    """``problems`` less the validation errors of values an unset ``${VAR}`` left empty
    (``'' is not an http(s) URL``, ``String should have at least 1 character``): they
    only repeat, in pydantic's words, the line that names the variable to export."""
    unset = [p.split(UNSET, 1)[0] for p in problems if UNSET in p]
    if not unset:
        return problems

    def echoes(problem: str) -> bool:
        location = _ANNOTATION.sub("", problem.split(": ", 1)[0])
        return bool(location) and any(
            u == location or u.startswith((f"{location}.", f"{location}[")) for u in unset
        )

    return [p for p in problems if UNSET in p or not echoes(p)]


def _format_errors(error: ValidationError, prefix: str) -> list[str]:
    problems = []
    for item in error.errors():
        location = prefix
        for part in item["loc"]:
            location += (
                f"[{part}]" if isinstance(part, int) else (f".{part}" if location else str(part))
            )
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key; remove it or check its spelling"
        elif item["type"] == "missing":
            message = "required key is missing"
        problems.append(f"{location}: {message}")
    return problems


def load_config(
    path: Path,
    *,
    connector_types: Mapping[str, Any] | None = None,
    sink_types: Mapping[str, Any] | None = None,
) -> LoadedConfig:
    """Read and validate ``path``; raise ConfigError listing every problem found.

    ``connector_types`` and ``sink_types`` add connector and sink classes by type name
    beside the installed entry points (a seam for tests and embedding applications).
    """
    from headwater.connectors import ConnectorClass
    from headwater.connectors import load_connector_class as installed_connector
    from headwater.sinks import SinkClass
    from headwater.sinks import load_sink_class as installed_sink

    def load_connector_class(type_name: str) -> ConnectorClass:
        if connector_types and type_name in connector_types:
            given: ConnectorClass = connector_types[type_name]
            return given
        return installed_connector(type_name)

    def load_sink_class(type_name: str) -> SinkClass:
        if sink_types and type_name in sink_types:
            added: SinkClass = sink_types[type_name]
            return added
        return installed_sink(type_name)

    if path.is_dir():
        path = path / "headwater.toml"
    if not path.exists():
        raise ConfigError(
            f"no config at {path}; expected a headwater.toml. "
            "Run `headwater init` or pass --config PATH."
        )
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}. Fix the syntax there.") from exc
    problems: list[str] = []
    raw = _substitute(raw, "", problems)
    config: HeadwaterConfig | None = None
    try:
        config = HeadwaterConfig.model_validate(raw)
    except ValidationError as exc:
        problems.extend(_format_errors(exc, ""))
    raw_sources = raw.get("source", [])
    source_options: dict[str, Any] = {}
    seen: set[str] = set()
    for i, entry in enumerate(raw_sources if isinstance(raw_sources, list) else []):
        if not isinstance(entry, dict):
            continue
        source_id = str(entry.get("id", i))
        where = f"source[{i}] (id={source_id})"
        if source_id in seen:
            problems.append(f"{where}.id: duplicate source id; every source needs its own id")
        seen.add(source_id)
        options = {k: v for k, v in entry.items() if k not in COMMON_SOURCE_KEYS}
        if not isinstance(entry.get("type"), str):
            continue
        try:
            cls = load_connector_class(entry["type"])
            source_options[source_id] = cls.Options.model_validate(options)
        except ConfigError as exc:
            problems.append(f"{where}.type: {exc}")
        except ValidationError as exc:
            problems.extend(_format_errors(exc, where))
    raw_indexes = raw.get("index", [])
    index_options: dict[str, Any] = {}
    names: set[str] = set()
    for i, entry in enumerate(raw_indexes if isinstance(raw_indexes, list) else []):
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            continue
        name = str(entry.get("name", i))
        where = f"index[{i}] (name={name})"
        if name in names:
            problems.append(f"{where}.name: duplicate index name")
        names.add(name)
        options = {k: v for k, v in entry.items() if k not in ("name", "type", "keep_previous_for")}
        try:
            index_options[name] = load_sink_class(entry["type"]).Options.model_validate(options)
        except ConfigError as exc:
            problems.append(f"{where}.type: {exc}")
        except ValidationError as exc:
            problems.extend(_format_errors(exc, where))
    if config is not None:
        problems.extend(executor_problems(config))
        problems.extend(api_key_problems(config))
    if problems or config is None:
        raise ConfigError("invalid configuration", _without_echoes(problems))
    return LoadedConfig(
        path=path.resolve(),
        root=path.resolve().parent,
        config=config,
        source_options=source_options,
        index_options=index_options,
    )
