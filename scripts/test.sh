#!/usr/bin/env bash
# Install (scripts/setup.sh), then lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check src tests bench examples
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
