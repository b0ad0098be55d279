#!/usr/bin/env bash
# Install (scripts/setup.sh), then lint, type-check and run the test suite.
#
#   bash scripts/test.sh            # everything (what .ci/run runs): ruff, mypy, all tests
#   bash scripts/test.sh --fast     # the unit tier: in-process, no server (ruff, mypy too)
#   bash scripts/test.sh -k leases  # anything else is passed to pytest
#
# Test files run on parallel workers (HW_TEST_WORKERS, default 4: most tests wait on
# subprocesses and servers, so 4 workers keep 2 cores busy); HW_TEST_WORKERS=0 runs them
# in this process. Every PostgreSQL test creates its own database, so workers never share one.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
if [ "${1:-}" = "--fast" ]; then
  shift
  tier=(-m "not server and not process and not slow and not model")
fi
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check src tests bench examples scripts
.venv/bin/mypy
.venv/bin/python -m pytest -n "${HW_TEST_WORKERS:-4}" --dist loadfile "${tier[@]}" "$@"
