#!/usr/bin/env bash
# Install (scripts/setup.sh), then run the demo on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python examples/demo.py "$@"
