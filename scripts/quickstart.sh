#!/usr/bin/env bash
# Quick start: install what is missing, build strata, plan GPT-3 175B on 1024 A100s.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target strata -j"$(nproc)"
./build/cli/strata plan "$@"
