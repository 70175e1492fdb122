#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`, or FUZZ_PRESET=sanitize; clang) and runs each on its committed
# corpus fuzz/corpus/<target>/ for a bounded time. Total seconds as $1 (default 60),
# split evenly over the targets. New interesting inputs go to a scratch folder, not
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
artifacts=$build/artifacts
mkdir -p "$artifacts"
status=0
for t in "${targets[@]}"; do
  exe=$build/fuzz/fuzz_$t
  if [ ! -x "$exe" ]; then
    echo "# fuzz_$t: not built (its library is missing), skipped" >&2
    continue
  fi
  scratch=$(mktemp -d)
  mkdir -p "fuzz/corpus/$t"
  echo "# fuzz_$t: ${per}s on fuzz/corpus/$t ($(ls "fuzz/corpus/$t" | wc -l) inputs)"
  dict=()
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  if ! "$exe" "$scratch" "fuzz/corpus/$t" "${dict[@]}" -max_total_time="$per" -timeout=10 \
       -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
       -artifact_prefix="$artifacts/${t}-" 2>"$scratch.log"; then
    echo "error: fuzz_$t found a failing input (see $artifacts/${t}-*):" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$scratch.log" | head -20 >&2 || tail -30 "$scratch.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$scratch.log" | \
      sed "s/^/#   /" || true
  fi
  rm -rf "$scratch" "$scratch.log"
done
exit $status
