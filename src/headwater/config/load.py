"""Reading ``headwater.toml``: substitute ``${ENV}``, validate everything, report all at once.

Validation happens in two passes that both collect problems instead of stopping at the
first: the common shape (``config.sections``), then each source's and index's own options
against the plugin's ``Options`` model, then the rules across sections
(``config.rules``). Every problem names its key path.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from headwater.config.identity import identity_problems
from headwater.config.ratelimit import ratelimit_problems
from headwater.config.rules import api_key_problems, executor_problems
from headwater.config.sections import HeadwaterConfig
from headwater.errors import ConfigError

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
    "hooks",
    "workspace_hooks",
    "rules",
    "watch",
    "webhook_secret",
    "notification_url",
    "rate_limit",
}


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
        """The workspace's state directory, resolved against the config's directory."""
        return resolve_path(self.root, self.config.workspace.state_dir)

    @property
    def manifest_url(self) -> str:
        """The manifest's database URL; the default and relative SQLite paths resolved to files."""
        url = self.config.manifest.url
        if url is None:
            return f"sqlite:///{self.state_dir / 'manifest.db'}"
        if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
            relative = url[len("sqlite:///") :]
            if relative and relative != ":memory:":
                return f"sqlite:///{resolve_path(self.root, relative)}"
        return url


def resolve_path(root: Path, value: str) -> Path:
    """``value`` as a path (``~`` expanded), relative ones resolved against ``root``."""
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

    path, raw = _read_toml(path)
    problems: list[str] = []
    raw = _substitute(raw, "", problems)
    config: HeadwaterConfig | None = None
    try:
        config = HeadwaterConfig.model_validate(raw)
    except ValidationError as exc:
        problems.extend(_format_errors(exc, ""))
    source_options = _source_options(raw, load_connector_class, problems)
    index_options = _index_options(raw, load_sink_class, problems)
    if config is not None:
        problems.extend(executor_problems(config))
        problems.extend(api_key_problems(config))
        problems.extend(identity_problems(config.identity, path.resolve().parent))
        problems.extend(ratelimit_problems(config.ratelimit, config.celery_broker))
    if problems or config is None:
        raise ConfigError("invalid configuration", _without_echoes(problems))
    return LoadedConfig(
        path=path.resolve(),
        root=path.resolve().parent,
        config=config,
        source_options=source_options,
        index_options=index_options,
    )


def _read_toml(path: Path) -> tuple[Path, dict[str, Any]]:
    """The config file ``path`` names (a directory: its headwater.toml) and its TOML."""
    if path.is_dir():
        path = path / "headwater.toml"
    if not path.exists():
        raise ConfigError(
            f"no config at {path}; expected a headwater.toml. "
            "Run `headwater init` or pass --config PATH."
        )
    try:
        return path, tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}. Fix the syntax there.") from exc


def _source_options(
    raw: Mapping[str, Any], connector_class: Callable[[str], Any], problems: list[str]
) -> dict[str, Any]:
    """Each source's connector options by source id, validated by its connector's
    ``Options``; a duplicate id, an unknown type or a bad option goes to ``problems``."""
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
            cls = connector_class(entry["type"])
            source_options[source_id] = cls.Options.model_validate(options)
        except ConfigError as exc:
            problems.append(f"{where}.type: {exc}")
        except ValidationError as exc:
            problems.extend(_format_errors(exc, where))
    return source_options


def _index_options(
    raw: Mapping[str, Any], sink_class: Callable[[str], Any], problems: list[str]
) -> dict[str, Any]:
    """Each index's sink options by index name, validated by its sink's ``Options``; a
    duplicate name, an unknown type or a bad option goes to ``problems``."""
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
            index_options[name] = sink_class(entry["type"]).Options.model_validate(options)
        except ConfigError as exc:
            problems.append(f"{where}.type: {exc}")
        except ValidationError as exc:
            problems.extend(_format_errors(exc, where))
    return index_options
