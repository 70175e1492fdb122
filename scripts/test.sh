#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test:
#   1. the Release build (CUDA targets compiled when a toolkit is present) + ctest,
#   2. the ASan/UBSan build of the unit tests + ctest,
#   3. the libFuzzer targets for a bounded time on their committed corpora.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh clang libclang-rt-14-dev chromium
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
jobs=$(nproc)
start=$SECONDS
echo "== release build =="
cmake --preset default >/dev/null
cmake --build --preset default -j"$jobs"
ctest --preset default -j"$jobs"
echo "== sanitizer build (ASan + UBSan) =="
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize -j"$jobs"
ctest --preset sanitize -j"$jobs" -LE mpi
if [ -x scripts/fuzz.sh ]; then
  echo "== fuzz (bounded) =="
  bash scripts/fuzz.sh 60
fi
echo "# all tests done in $((SECONDS - start)) s"
