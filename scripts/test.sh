#!/usr/bin/env bash
# Install (scripts/setup.sh), then lint, and run the test suite while mypy type-checks.
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
# Bytecode, written once and reused: the suite starts hundreds of Python processes, and
# with PYTHONDONTWRITEBYTECODE set (as on CI machines) none is written, so every process
# compiled sqlalchemy, alembic, pydantic and the package again from source: 0.93 s of CPU
# for one `headwater status` against 0.44 s with bytecode. setup.sh installs without
# compiling (pip --no-compile); each module used is compiled here on its first import.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m compileall -q src >/dev/null
.venv/bin/ruff check src tests bench examples scripts
# mypy checks while the tests run (most tests wait on processes and servers, so the
# two cores have room for it); its report is printed, and its failure counted, at the end.
mypy_log=$(mktemp)
.venv/bin/mypy >"$mypy_log" 2>&1 &
mypy_job=$!
status=0
.venv/bin/python -m pytest -n "${HW_TEST_WORKERS:-4}" --dist loadfile --no-loadscope-reorder \
  "${tier[@]}" "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "scripts/test.sh: pytest selected no test (exit 5)" >&2
fi
mypy_status=0
wait "$mypy_job" || mypy_status=$?
echo "mypy:"
cat "$mypy_log"
rm -f "$mypy_log"
if [ "$mypy_status" -ne 0 ]; then
  echo "scripts/test.sh: mypy failed (exit $mypy_status)" >&2
  [ "$status" -ne 0 ] || status=$mypy_status
fi
exit "$status"
