#!/usr/bin/env bash
# Installs what is missing, builds everything (CUDA targets compiled when a toolkit is
# present) and runs every test with ctest: unit tests, CLI tests, MPI parity tests and
# the headless-browser report check. Then the hardening checks (scripts/test-hardening.sh):
# the ASan + UBSan build of the tests and bounded libFuzzer runs, STRATA_FUZZ_SECONDS
# over all targets together (default 60). Each phase prints a `## ` header and its time.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
source scripts/ci-env.sh

bash scripts/install-deps.sh chromium

phase "release build (preset default)"
# -Werror on project code: a new warning fails the run (STRATA_WARNINGS_AS_ERRORS).
cmake --preset default -DSTRATA_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build --preset default -j"$jobs"
phase_done "release build"

phase "release tests (ctest --preset default)"
ctest --preset default -j"$jobs"
phase_done "release tests"

bash scripts/test-hardening.sh "${STRATA_FUZZ_SECONDS:-60}"
echo "# all tests done in $((SECONDS - start)) s"
