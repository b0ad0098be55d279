"""Operational logging for the CLI: text or JSON lines, stderr and a file, secrets masked.

``-v`` turns on INFO (``-vv`` DEBUG), ``--log-format json`` writes one JSON object per
line (``ts``, ``level``, ``logger``, ``msg`` plus any ``extra`` fields) for log shippers,
``--log-file PATH`` appends the same lines to a file; ``serve`` routes uvicorn's loggers
through the same handlers (``uvicorn_log_config``), access lines with their fields.
Every value that the config pulls in through a ``${ENV_VAR}`` reference is a secret: a
filter on every handler (and ``redact`` for the error line) replaces it with ``***``
before anything is written.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from headwater.config import ENV_REFERENCE
from headwater.errors import ConfigError

FORMATS = ("text", "json")
MASK = "***"
MIN_SECRET_LENGTH = 4  # shorter values would mask ordinary words; keep secrets longer

_secrets: set[str] = set()
_format = ["text"]  # the format ``configure`` installed (``serve`` hands it to uvicorn)
_files: list[Path] = []  # the --log-file ``configure`` installed, if any
ACCESS_FIELDS = ("client", "method", "path", "http_version", "status_code")
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "color_message",  # uvicorn's ANSI-coloured copy of msg
}


def register_secrets(values: list[str]) -> None:
    """Remember ``values`` (those long enough to be secrets) to mask in every log line and error."""
    _secrets.update(v for v in values if len(v) >= MIN_SECRET_LENGTH)


def register_config_secrets(config: Path) -> None:
    """Every ``${ENV}`` the config file references is masked in logs and error lines."""
    path = config / "headwater.toml" if config.is_dir() else config
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return  # a missing config is reported by the command that needs it
    register_secrets([os.environ[n] for n in ENV_REFERENCE.findall(text) if n in os.environ])


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by the mask."""
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


class RedactSecrets(logging.Filter):
    """A logging filter that masks registered secrets in messages and tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Mask the record's message and traceback text; always keep the record."""
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            for name, value in zip(ACCESS_FIELDS, args, strict=True):  # its line, as fields
                setattr(record, name, redact(value) if isinstance(value, str) else value)
        if _secrets:
            record.msg = redact(record.getMessage())
            record.args = None
            if record.exc_info:
                record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
                record.exc_info = None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, then the record's extras."""

    def converter(self, seconds: float | None) -> time.struct_time:
        """``ts`` is UTC, however the formatter was made."""
        return time.gmtime(seconds)

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line."""
        data: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            data["exc"] = record.exc_text
        return redact(json.dumps(data, default=str))


def configure(verbose: int, log_format: str, log_file: Path | None) -> None:
    """Install the handlers on the root logger (replacing earlier ones)."""
    if log_format not in FORMATS:
        raise ConfigError(
            f"--log-format {log_format!r} is not a log format; expected one of "
            f"{', '.join(FORMATS)}."
        )
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    formatter: logging.Formatter
    if log_format == "json":
        formatter = JsonFormatter()
    else:
        formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(
                f"--log-file {log_file}: cannot open it ({exc.strerror}); give a writable path."
            ) from exc
    _format[0] = log_format
    _files[:] = [log_file] if log_file is not None else []
    logging.captureWarnings(True)  # a library's warning is a log line too, never raw text
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(RedactSecrets())
        root.addHandler(handler)
    root.setLevel(level)
    # Progress lines are the operator's heartbeat: shown even without -v.
    logging.getLogger("headwater.progress").setLevel(logging.INFO)


def config_redactor(config: str) -> RedactSecrets:
    """The redacting filter of a process that never ran ``configure`` (a ``serve
    --workers N`` child): it registers the secrets of ``config`` first."""
    register_config_secrets(Path(config))
    return RedactSecrets()


def uvicorn_log_config(config: Path, workers: int = 1) -> dict[str, Any] | None:
    """uvicorn's ``log_config``. With ``--log-format json`` its loggers send their records
    through JSON handlers, so every line ``serve`` writes is JSON: the root handlers of
    this process, or, with ``workers`` > 1 (worker processes are spawned, with no
    handlers of their own), handlers this config builds in each of them, masking the
    config's secrets too. With text, None keeps uvicorn's own format."""
    if _format[0] != "json":
        return None
    loggers = {
        "uvicorn": {"handlers": [], "propagate": True, "level": "INFO"},
        "uvicorn.error": {"level": "INFO", "propagate": True},
        "uvicorn.access": {"level": "INFO", "propagate": True},
        "headwater": {"level": "INFO"},
    }
    out: dict[str, Any] = {"version": 1, "disable_existing_loggers": False, "loggers": loggers}
    if workers > 1:
        handlers: dict[str, Any] = {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "json",
                "filters": ["redact"],
            }
        }
        for log_file in _files:
            handlers["file"] = {
                "class": "logging.FileHandler",
                "filename": str(log_file),
                "encoding": "utf-8",
                "formatter": "json",
                "filters": ["redact"],
            }
        out.update(
            formatters={"json": {"()": f"{__name__}.JsonFormatter"}},
            filters={"redact": {"()": f"{__name__}.config_redactor", "config": str(config)}},
            handlers=handlers,
            root={"handlers": list(handlers), "level": logging.getLogger().level},
        )
    return out
