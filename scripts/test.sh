#!/usr/bin/env bash
# Installs what is missing, builds everything (CUDA targets compiled when a toolkit is
# present) and runs every test with ctest: unit tests, CLI tests, MPI parity tests and
# the headless-browser report check.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh chromium
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
jobs=$(nproc)
start=$SECONDS
cmake --preset default >/dev/null
cmake --build --preset default -j"$jobs"
ctest --preset default -j"$jobs"
echo "# all tests done in $((SECONDS - start)) s"
