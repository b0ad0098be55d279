"""Which modules a ``headwater`` command leaves imported: the guard against eager imports.

``cli_modules`` runs the real CLI in a subprocess through ``runpy`` (exactly what
``python -m headwater`` does) and, at interpreter exit, writes ``sorted(sys.modules)`` to
a file; tests assert that none of ``HEAVY`` (or a command's own list) is among them, so
an import added at module level anywhere on a command's path fails a test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

# Never needed to search, show status or run a no-op sync over files: the model's training
# stack, migrations, the HTTP server, the task queue, clients of other connectors, parsers.
HEAVY = (
    "torch",
    "transformers",
    "sentence_transformers",
    "onnx",
    "alembic",
    "mako",
    "fastapi",
    "starlette",
    "uvicorn",
    "jinja2",
    "prometheus_client",
    "celery",
    "kombu",
    "redis",
    "httpx",
    "qdrant_client",
    "boto3",
    "botocore",
    "dulwich",
    "feedparser",
    "pymysql",
    "psycopg",
    "trafilatura",
    "lxml",
    "pypdf",
    "docx",
    "reportlab",
    "markdown_it",  # typer.rich_utils (help pages, usage errors) loads lazily
)
# What only embedding needs: a status or a sync with nothing to embed loads none of it.
MODEL_RUNTIME = ("onnxruntime", "tokenizers", "numpy")

_PROBE = """\
import atexit, json, runpy, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv[0] = "headwater"
runpy.run_module("headwater", run_name="__main__", alter_sys=True)
"""


def cli_modules(
    args: list[str], cwd: Path, env: Mapping[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``headwater ARGS`` in ``cwd``; its result and the modules loaded at its exit."""
    out = cwd / ".modules.json"
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(out), *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    modules = set(json.loads(out.read_text())) if out.exists() else set()
    out.unlink(missing_ok=True)
    return done, modules


def loaded(modules: set[str], names: Iterable[str]) -> list[str]:
    """Those of ``names`` (top-level packages) that were imported."""
    return sorted(n for n in names if n in modules or any(m.startswith(n + ".") for m in modules))
