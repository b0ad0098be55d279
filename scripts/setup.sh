#!/usr/bin/env bash
# Create .venv at the repository root and install Headwater with everything it needs.
# torch==2.13.0 (the CPU build) is installed first so nothing can pull a CUDA build.
# A second run with the same pyproject.toml (and this script) into a .venv whose
# `headwater` is this checkout's src/ installs nothing from PyPI: it checks and returns.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

# Azurite, Microsoft's Azure Blob Storage emulator (npm), for the azure_blob connector
# tests (tests/connectors/azure_blob start it on a free port). Installed once into
# .ci/azurite, which git ignores; the tests fail with this command if it is missing.
azurite() {
  if [ ! -x .ci/azurite/node_modules/.bin/azurite-blob ]; then
    if ! command -v npm >/dev/null 2>&1; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
    fi
    npm install --no-audit --no-fund --loglevel=error --prefix .ci/azurite azurite@3.37.0
  fi
}

stamp=.venv/.headwater-setup
wanted=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ] \
  && [ "$(env -u PYTHONPATH .venv/bin/python -c 'import headwater; print(headwater.__file__)' 2>/dev/null)" \
    = "$PWD/src/headwater/__init__.py" ]; then
  azurite
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# Azurite's npm install waits on the registry, pip's mostly on the CPU: side by side.
azurite >.venv/azurite-install.log 2>&1 &
npm_job=$!
# --no-compile: pip would compile every module of every package (torch alone has
# thousands) up front; Python compiles the few that are imported, once, on first import.
.venv/bin/python -m pip install -q --no-compile --upgrade pip
.venv/bin/python -m pip install -q --no-compile torch==2.13.0
.venv/bin/python -m pip install -q --no-compile -e '.[dev]'
if ! wait "$npm_job"; then
  cat .venv/azurite-install.log >&2
  exit 1
fi
echo "$wanted" >"$stamp"
