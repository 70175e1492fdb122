#!/usr/bin/env bash
# The hardening checks (issue 6), run by scripts/test.sh after the main tests, or alone:
# the ASan + UBSan build of the tests (preset `sanitize`; LeakSanitizer on, with Open MPI's
# own allocations suppressed by tests/lsan-openmpi.supp), its non-MPI tests, then the
# libFuzzer targets for a bounded time ($1 seconds over all targets, default 60).
# `--build-only`: the sanitizer build alone (scripts/test.sh runs it beside the release
# tests, then this script again, whose build step then has nothing to do).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ci-env.sh

bash scripts/install-deps.sh clang libclang-rt-14-dev

phase "sanitizer build (preset sanitize: ASan + UBSan)"
# -Werror on project code under clang too (STRATA_WARNINGS_AS_ERRORS).
cmake --preset sanitize -DSTRATA_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build --preset sanitize -j"$jobs"
phase_done "sanitizer build"
[ "${1:-}" = --build-only ] && exit 0

# The exhaustive equivalence checks (pruned search = simulating every candidate, rank grid
# = naive enumeration, worst placed group = brute-force scan) are left to the release run:
# they re-walk the same code as the other planner tests, only over many more cases (about
# 80 s of the sanitizer run on 2 cores). So is the walkthrough page (docs/walkthrough.md): it
# runs the commands the CLI tests run, on full-size models and clusters. So are three more
# that repeat, only larger, what other tests run here: the README transcript (the default
# plan, which CliPlan.NoArgumentsPrintsTheDefaultTable runs too) and the absurd sizes, a
# check of time that an unoptimized instrumented build cannot make. (The leave-one-source-out
# fit runs here again: with each run's model graphs kept across the fit it takes 6.6 s.) The preset runs each test program as whole programs
# (STRATA_TEST_WHOLE_PROGRAMS), so GoogleTest's filter leaves them out.
exhaustive='*SearchPruning*:*MatchesNaiveEnumerator*:*MatchesABruteForceScan*:*Walkthrough*'
exhaustive+=':*TheReadmeTranscriptMatchesTheDefaultPlan:*AbsurdSizeTest*'
phase "sanitizer tests (ctest --preset sanitize -LE 'mpi|browser', GTEST_FILTER='-$exhaustive')"
GTEST_FILTER="-$exhaustive" ctest --preset sanitize -j"$jobs" -LE 'mpi|browser'
phase_done "sanitizer tests"

# The fuzz targets were built with the sanitizer build above (preset sanitize sets
# STRATA_BUILD_FUZZ; the parsers' libraries carry libFuzzer's coverage there too).
phase "fuzzing (scripts/fuzz.sh ${1:-60} on the sanitizer build: ${1:-60} s over all targets, one per core at a time)"
FUZZ_PRESET=sanitize bash scripts/fuzz.sh "${1:-60}"
phase_done "fuzzing"
