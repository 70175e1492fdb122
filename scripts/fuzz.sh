#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`, or FUZZ_PRESET=sanitize; clang) and runs each on its committed
# corpus fuzz/corpus/<target>/ for a bounded time. Total seconds as $1 (default 60),
# split evenly over the targets; FUZZ_JOBS targets (default: one per core) run at a time,
# each on one core, so the wall time is about $1 / FUZZ_JOBS. New interesting inputs go to a scratch folder, not
# the committed corpus; a crash leaves its input in <build>/artifacts/ and makes this
# script exit non-zero. Add a found case to fuzz/corpus/<target>/ once it is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
total=${1:-60}
jobs=${FUZZ_BUILD_JOBS:-$(nproc)}
targets=(model_yaml hf_config hf_mapping cluster device_profile plan checkpoint_manifest megatron_args)

# The `fuzz` preset's folder unless overridden. FUZZ_PRESET=sanitize reuses the sanitizer
# build, which compiles the same targets (scripts/test-hardening.sh): no third build in CI.
preset=${FUZZ_PRESET:-fuzz}
build=${FUZZ_BUILD_DIR:-$([ "$preset" = sanitize ] && echo build-sanitize || echo build-fuzz)}

cmake --preset "$preset" -B "$build" >/dev/null
cmake --build "$build" --target fuzz_targets -j"$jobs"

per=$(( total / ${#targets[@]} ))
[ "$per" -ge 1 ] || per=1
fuzz_jobs=${FUZZ_JOBS:-$(nproc)}
artifacts=$build/artifacts
mkdir -p "$artifacts"
logs=$(mktemp -d)

# One target for $per seconds; its report goes to $logs/<target>.out, its verdict to
# $logs/<target>.status (0: no failing input).
fuzz_one() {
  local t=$1 exe=$build/fuzz/fuzz_$1 out=$logs/$1.out
  if [ ! -x "$exe" ]; then
    echo "# fuzz_$t: not built (its library is missing), skipped" >"$out"
    echo skipped >"$logs/$t.status"
    return
  fi
  local scratch
  scratch=$(mktemp -d)
  mkdir -p "fuzz/corpus/$t"
  echo "# fuzz_$t: ${per}s on fuzz/corpus/$t ($(ls "fuzz/corpus/$t" | wc -l) inputs)" >"$out"
  local dict=()
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  if ! "$exe" "$scratch" "fuzz/corpus/$t" "${dict[@]}" -max_total_time="$per" -timeout=10 \
       -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
       -artifact_prefix="$artifacts/${t}-" 2>"$scratch.log"; then
    { echo "error: fuzz_$t found a failing input (see $artifacts/${t}-*):"
      grep -E "ERROR|SUMMARY|Test unit written" "$scratch.log" | head -20 || tail -30 "$scratch.log"
    } >>"$out"
    echo 1 >"$logs/$t.status"
  else
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$scratch.log" | \
      sed "s/^/#   /" >>"$out" || true
    echo 0 >"$logs/$t.status"
  fi
  rm -rf "$scratch" "$scratch.log"
}

for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$fuzz_jobs" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait

# Reports in the targets' order; a failing target's lines go to stderr.
status=0
for t in "${targets[@]}"; do
  verdict=$(cat "$logs/$t.status" 2>/dev/null || echo 1)
  if [ "$verdict" = 0 ]; then
    cat "$logs/$t.out"
  elif [ "$verdict" = skipped ]; then
    cat "$logs/$t.out" >&2
  else
    cat "$logs/$t.out" >&2
    status=1
  fi
done
rm -rf "$logs"
exit $status
