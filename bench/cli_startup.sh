#!/usr/bin/env bash
# Figures, not a test: how long one `strata` process takes to start and answer, median of
# N runs (default 21) of `strata --version` and of the default `strata plan` (GPT-3 175B on
# 1024 A100s), with the machine, the CPU count and load printed. The CLI tests start the
# binary about two thousand times, so its start-up time is also most of their run time.
# Usage: bench/cli_startup.sh [path/to/strata] [runs]
set -euo pipefail
exe=${1:-build/cli/strata}
runs=${2:-21}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_runs() {
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$exe" "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
  done | median
}
echo "# strata CLI start-up: $("$exe" --version), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg), $(uname -m)"
echo "# linked: $(ldd "$exe" | awk '/cublas|cudart|nccl/ {printf "%s ", $1}')"
printf "# median of %d runs, seconds\n" "$runs"
printf "strata --version   %.3f\n" "$(time_runs --version)"
printf "strata plan        %.3f\n" "$(time_runs plan)"
