#!/usr/bin/env bash
# Install (scripts/setup.sh), then lint, type-check and run the test suite.
#
#   bash scripts/test.sh            # everything (what .ci/run runs): ruff, mypy, all tests
#   bash scripts/test.sh --fast     # the unit tier: in-process, no server (ruff, mypy too)
#   bash scripts/test.sh -k leases  # anything else is passed to pytest
#
# Test files run on parallel workers (HW_TEST_WORKERS, default 4: most tests wait on
# subprocesses and servers, so 4 workers keep 2 cores busy); HW_TEST_WORKERS=0 runs them
# in this process. Files are handed out in the order tests/conftest.py gives them (the
# long poles first), not re-sorted by xdist. Every PostgreSQL test creates its own
# database, so workers never share one. Exit status: pytest's (5: no test was selected).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
if [ "${1:-}" = "--fast" ]; then
  shift
  tier=(-m "not server and not process and not slow and not model")
fi
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Bytecode for src/ once, up front: the suite starts hundreds of `headwater` processes,
# and with PYTHONDONTWRITEBYTECODE set each would otherwise compile the package again.
.venv/bin/python -m compileall -q src >/dev/null
.venv/bin/ruff check src tests bench examples scripts
.venv/bin/mypy
status=0
.venv/bin/python -m pytest -n "${HW_TEST_WORKERS:-4}" --dist loadfile --no-loadscope-reorder \
  "${tier[@]}" "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "scripts/test.sh: pytest selected no test (exit 5)" >&2
fi
exit "$status"
