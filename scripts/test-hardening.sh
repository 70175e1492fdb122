#!/usr/bin/env bash
# The hardening checks of issue 6, apart from the main test run: the ASan + UBSan build
# of the unit tests, then the libFuzzer targets for a bounded time ($1 seconds, default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh clang libclang-rt-14-dev
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
jobs=$(nproc)
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize -j"$jobs"
ctest --preset sanitize -j"$jobs" -LE 'mpi|browser'
bash scripts/fuzz.sh "${1:-60}"
