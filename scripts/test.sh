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

bash scripts/install-deps.sh chromium clang libclang-rt-14-dev

phase "release build (preset default)"
# -Werror on project code: a new warning fails the run (STRATA_WARNINGS_AS_ERRORS).
cmake --preset default -DSTRATA_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build --preset default -j"$jobs"
phase_done "release build"

# The release tests leave about a third of two cores idle (mpirun start-ups, processes
# waiting on each other), so the sanitizer build runs beside them and fills it; its output
# is printed after the tests. The tests' own timeouts are 90 s and more for runs of a few
# seconds.
phase "release tests (ctest --preset default), the sanitizer build (preset sanitize) beside them"
sanitize_log=$(mktemp)
# setsid: its own process group, so that a failed or interrupted run stops the whole build.
setsid bash -c 'bash scripts/test-hardening.sh --build-only >"$1" 2>&1; echo $? >"$1.rc"' _ "$sanitize_log" &
sanitize_pid=$!
trap 'kill -- -$sanitize_pid 2>/dev/null || true' EXIT
tests_rc=0
ctest --preset default -j"$jobs" || tests_rc=$?
tests_done=$((SECONDS - phase_start))
wait $sanitize_pid || true
trap - EXIT
cat "$sanitize_log"
echo "## release tests: done in $tests_done s"
[ "$tests_rc" -eq 0 ] || { echo "error: release tests failed" >&2; exit "$tests_rc"; }
[ "$(cat "$sanitize_log.rc")" = 0 ] || { echo "error: sanitizer build failed" >&2; exit 1; }
rm -f "$sanitize_log" "$sanitize_log.rc"
phase_done "release tests and sanitizer build"

bash scripts/test-hardening.sh "${STRATA_FUZZ_SECONDS:-60}"
echo "# all tests done in $((SECONDS - start)) s"
