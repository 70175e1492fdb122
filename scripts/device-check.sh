#!/usr/bin/env bash
# One bounded check of the CUDA build on a GPU machine, run there from the repo root with
# .device-kit/ (from scripts/device-kit.sh) carried along:
#
#   bash scripts/device-check.sh        (device tool: carry [".device-kit"], timeout_s 600)
#
# Unpacks the kit, finds the machine's libcudart / libcublasLt / libnccl / libcuda (CUDA
# toolkit folders, ldconfig, the pip packages' nvidia/*/lib), checks that every carried
# binary resolves its libraries, then runs, each step under its own timeout and all of
# them inside DEVICE_CHECK_BUDGET_S (default 420 s), going on after a failure:
#   env        strata --version, a one-step CPU `strata train` of model tiny (MPI singleton
#              from the kit's relocated Open MPI)
#   tests      runtime_cuda_gpt_test, kernels_cuda_test, train_cuda_cli_test
#   train      strata simulate (gpt2-124m on h200-node, dp=tp=pp=1, micro/global batch 8)
#              and strata train --backend cuda --steps 20 --metrics $OUT/train.jsonl
#   bench      strata_bench_cuda_train --model gpt2-124m --steps 10
#   calibrate  strata calibrate --backend cuda --quick (gpt2-124m's GEMMs at tp 1) to
#              $OUT/h200-measured.yaml, then strata simulate with that profile
#   sanitizer  compute-sanitizer --tool memcheck on one fp32 test of runtime_cuda_gpt_test
# Output (8 files at most, what the device tool brings back): $OUT/summary.txt (machine,
# discovery, step results), tests.log, train.log, train.jsonl, bench.log, calibrate.log,
# h200-measured.yaml, sanitizer.log. Exit status 1 when a step failed.
#
# Settings (environment): OUT (default ${TMPDIR:-/tmp}/strata-device-out),
# DEVICE_CHECK_STEPS (names above, in the order to run), DEVICE_CHECK_BUDGET_S,
# DEVICE_KIT (folder holding kit.tar.xz, or an unpacked kit/), DEVICE_CHECK_WORK (where
# to unpack), DEVICE_CHECK_GLIBC_FALLBACK=1 (start programs through the kit's glibc even
# where the machine's would do), SANITIZER_FILTER (gtest filter).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 2
OUT=${OUT:-${TMPDIR:-/tmp}/strata-device-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
steps=${DEVICE_CHECK_STEPS:-env tests train bench calibrate sanitizer}
budget=${DEVICE_CHECK_BUDGET_S:-420}
deadline=$((SECONDS + budget))
summary=$OUT/summary.txt
: >"$summary"

say() { printf '%s\n' "$*" | tee -a "$summary"; }
note() { printf '%s\n' "$*" >>"$summary"; }
say "# strata device check $(date -u +%Y-%m-%dT%H:%M:%SZ), repo $repo, OUT $OUT, budget ${budget}s"

# ---------------------------------------------------------------- kit
kit_src=${DEVICE_KIT:-$repo/.device-kit}
work=${DEVICE_CHECK_WORK:-${TMPDIR:-/tmp}/strata-device-kit}
if [[ -f $kit_src/kit/env.sh ]]; then
  KIT=$kit_src/kit
elif [[ -f $kit_src/kit.tar.xz ]]; then
  rm -rf "$work" && mkdir -p "$work"
  if ! tar -xJf "$kit_src/kit.tar.xz" -C "$work" 2>/dev/null; then
    say "tar -xJ failed (no xz?); unpacking with python3's tarfile"
    python3 -c 'import sys, tarfile
kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
tarfile.open(sys.argv[1]).extractall(sys.argv[2], **kw)' \
      "$kit_src/kit.tar.xz" "$work" || { say "FATAL: cannot unpack $kit_src/kit.tar.xz"; exit 2; }
  fi
  KIT=$work/kit
else
  say "FATAL: no kit at $kit_src (run scripts/device-kit.sh here, carry .device-kit)"; exit 2
fi
# shellcheck source=/dev/null
. "$KIT/env.sh"
say "kit: $KIT (commit ${KIT_COMMIT:-?}; needs glibc ${KIT_REQ_GLIBC:-?}, binaries alone ${KIT_REQ_GLIBC_BINS:-?})"
[[ -f $kit_src/MANIFEST.txt ]] && cat "$kit_src/MANIFEST.txt" >>"$summary"

# ---------------------------------------------------------------- machine
say "## machine"
say "uname: $(uname -srm)"
[[ -r /etc/os-release ]] && say "os: $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"')"
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
[[ -n $glibc ]] || glibc=$(ldd --version 2>/dev/null | head -1 | grep -oE '[0-9]+\.[0-9]+$')
say "glibc: ${glibc:-unknown}; cores $(nproc); $(awk '/MemTotal/ {printf "MemTotal %.0f GiB", $2/1048576}' /proc/meminfo)"
smi=$(command -v nvidia-smi || echo /usr/local/nvidia/bin/nvidia-smi)
if [[ -x $smi ]]; then
  timeout 30 "$smi" 2>&1 | tee -a "$summary"
  timeout 30 "$smi" --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1 | tee -a "$summary"
else
  say "nvidia-smi: not found"
fi

ver_ge() { [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1) == "$2" ]]; }   # $1 >= $2

# ldconfig's view: "NAME PATH" for x86-64 libraries.
ldcache=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) | awk '/x86-64/ {print $1, $NF}')
system_lib() {   # system_lib SONAME: the machine's own copy, or nothing
  local p d
  p=$(awk -v n="$1" '$1 == n {print $2; exit}' <<<"$ldcache")
  [[ -n $p && -f $p && -s $p ]] || p=""
  if [[ -z $p ]]; then
    for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/lib; do
      if [[ -f $d/$1 && -s $d/$1 ]]; then p=$d/$1; break; fi
    done
  fi
  printf '%s' "$p"
}

# ---------------------------------------------------------------- glibc / libstdc++ / compat
loader=()
libpath=$KIT/lib
if [[ ${DEVICE_CHECK_GLIBC_FALLBACK:-0} == 1 ]] || [[ -z $glibc ]] || ! ver_ge "$glibc" "$KIT_REQ_GLIBC"; then
  say "glibc ${glibc:-?} < ${KIT_REQ_GLIBC} (or forced): programs start through the kit's loader and glibc"
  loader=("$KIT/compat/glibc/ld-linux-x86-64.so.2" --library-path)
  libpath+=":$KIT/compat/libstdcxx"
else
  cxx=$(system_lib libstdc++.so.6)
  gccs=$(system_lib libgcc_s.so.1)
  if [[ -n $cxx && -n $gccs ]] && grep -qa "GLIBCXX_${KIT_REQ_GLIBCXX}" "$cxx" &&
     grep -qa "CXXABI_${KIT_REQ_CXXABI}" "$cxx" && grep -qa "GCC_${KIT_REQ_GCC}" "$gccs"; then
    say "libstdc++: the machine's $cxx (has GLIBCXX_${KIT_REQ_GLIBCXX}, CXXABI_${KIT_REQ_CXXABI})"
  else
    say "libstdc++/libgcc_s: the kit's (the machine's ${cxx:-(none)} / ${gccs:-(none)} lack GLIBCXX_${KIT_REQ_GLIBCXX}, CXXABI_${KIT_REQ_CXXABI} or GCC_${KIT_REQ_GCC})"
    libpath+=":$KIT/compat/libstdcxx"
  fi
fi
for c in libz:libz.so.1 libudev:libudev.so.1; do
  if [[ -n ${loader[*]} ]] || [[ -z $(system_lib "${c#*:}") ]]; then
    libpath+=":$KIT/compat/${c%%:*}"; say "${c#*:}: the kit's"
  fi
done

# ---------------------------------------------------------------- CUDA libraries
cand=()
for h in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  [[ -n $h ]] && cand+=("$h/lib64" "$h/lib" "$h/targets/x86_64-linux/lib")
done
while IFS= read -r d; do cand+=("$d/lib64" "$d/lib" "$d/targets/x86_64-linux/lib"); done < <(
  compgen -G '/usr/local/cuda-*' | sort -rV)
# pip packages (nvidia-cublas, nvidia-nccl-cu13, ...): nvidia/<pkg>/lib, found by the
# python3 that holds them, then by a search of the usual site-packages folders.
pip_dirs=$(timeout 60 python3 - 2>/dev/null <<'EOF'
import os
try:
    import nvidia
    for p in list(nvidia.__path__):
        for d in sorted(os.listdir(p)):
            for sub in ("lib", "lib64"):
                q = os.path.join(p, d, sub)
                if os.path.isdir(q):
                    print(q)
except Exception:
    pass
EOF
)
while IFS= read -r d; do [[ -n $d ]] && cand+=("$d"); done <<<"$pip_dirs"
while IFS= read -r d; do cand+=("$d"); done < <(
  compgen -G '/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib'
  compgen -G '/usr/local/lib/python3*/dist-packages/nvidia/*/lib'
  compgen -G '/usr/local/lib/python3*/site-packages/nvidia/*/lib'
  compgen -G '/usr/lib/python3/dist-packages/nvidia/*/lib'
  compgen -G '/opt/conda/lib/python3*/site-packages/nvidia/*/lib')
cand+=(/usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /lib/x86_64-linux-gnu)
declare -A seen_dir=()
uniq_cand=()
for d in "${cand[@]}"; do
  [[ -d $d ]] || continue
  r=$(readlink -f "$d")
  [[ -n ${seen_dir[$r]:-} ]] && continue
  seen_dir[$r]=1; uniq_cand+=("$d")
done
cand=("${uniq_cand[@]}")

say "## CUDA libraries (first folder that has each)"
cuda_dirs=()
cuda_ok=1
for lib in libcudart.so.13 libcublasLt.so.13 libnccl.so.2 libcuda.so.1; do
  found=""
  for d in "${cand[@]}"; do
    [[ -e $d/$lib ]] && { found=$d/$lib; break; }
  done
  [[ -z $found ]] && found=$(awk -v n="$lib" '$1 == n {print $2; exit}' <<<"$ldcache")
  if [[ -n $found ]]; then
    d=$(dirname "$found")
    say "  $lib: $found -> $(readlink -f "$found")"
    [[ " ${cuda_dirs[*]} " == *" $d "* ]] || cuda_dirs+=("$d")
  else
    say "  $lib: NOT FOUND"; cuda_ok=0
  fi
done
# Also every other folder that has one (a second copy is noted, not used).
for d in "${cand[@]}"; do
  for lib in libcublasLt.so.13 libnccl.so.2 libcudart.so.13; do
    if [[ -e $d/$lib && " ${cuda_dirs[*]} " != *" $d "* ]]; then note "  (also: $d/$lib)"; fi
  done
done
for d in "${cuda_dirs[@]}"; do libpath+=":$d"; done
[[ -n ${LD_LIBRARY_PATH:-} ]] && libpath+=":$LD_LIBRARY_PATH"
export LD_LIBRARY_PATH=$libpath
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
[[ -n ${loader[*]} ]] && say "loader: ${loader[0]}"

# ---------------------------------------------------------------- binaries resolve?
say "## library resolution of the kit's binaries"
for b in "$KIT"/bin/* "$KIT"/lib/*.so*; do
  if [[ -n ${loader[*]} ]]; then
    res=$("${loader[0]}" --list --library-path "$LD_LIBRARY_PATH:$KIT/compat/glibc" "$b" 2>&1)
  else
    res=$(ldd "$b" 2>&1)
  fi
  bad=$(grep -E 'not found|version .* not found|No such file' <<<"$res")
  if [[ -n $bad ]]; then say "  $(basename "$b"): $(tr '\n' ' ' <<<"$bad")"
  elif [[ $b == "$KIT"/bin/* ]]; then say "  $(basename "$b"): all resolved"; fi
  if [[ $b == "$KIT/bin/strata" ]]; then
    note "  strata's libraries:"; awk '{print "    " $0}' <<<"$res" >>"$summary"
  fi
done

# K: the prefix that starts a kit binary (the kit's loader where glibc is too old).
K=()
[[ -n ${loader[*]} ]] && K=("${loader[@]}" "$LD_LIBRARY_PATH:$KIT/compat/glibc")
B=$KIT/bin
# The strata that train_cuda_cli_test runs is compiled in (the build machine's path).
if [[ -n ${KIT_STRATA_EXE:-} ]]; then
  if [[ ! -e $KIT_STRATA_EXE ]] || grep -q 'strata-device-check wrapper' "$KIT_STRATA_EXE" 2>/dev/null; then
    if mkdir -p "$(dirname "$KIT_STRATA_EXE")" 2>/dev/null; then
      {
        echo '#!/usr/bin/env bash'
        echo '# strata-device-check wrapper: the kit strata, for tests with this path compiled in'
        printf 'export LD_LIBRARY_PATH=%q\n' "$LD_LIBRARY_PATH"
        printf '. %q\n' "$KIT/env.sh"
        if [[ -n ${loader[*]} ]]; then
          # shellcheck disable=SC2016  # $LD_LIBRARY_PATH and $@ expand when the wrapper runs
          printf 'exec %q --library-path "$LD_LIBRARY_PATH:%q" %q "$@"\n' "${loader[0]}" "$KIT/compat/glibc" "$KIT/bin/strata"
        else
          printf 'exec %q "$@"\n' "$KIT/bin/strata"
        fi
      } >"$KIT_STRATA_EXE" && chmod +x "$KIT_STRATA_EXE"
      say "wrote $KIT_STRATA_EXE -> the kit's strata (for train_cuda_cli_test)"
    else
      say "cannot create $KIT_STRATA_EXE: train_cuda_cli_test will not find strata"
    fi
  else
    say "WARNING: $KIT_STRATA_EXE exists and is not ours: train_cuda_cli_test runs that strata"
  fi
fi

# ---------------------------------------------------------------- steps
declare -a results=()
failed=()
# run_step NAME LOG MAX_SECONDS COMMAND...: runs COMMAND under timeout (the smaller of
# MAX_SECONDS and what the budget has left), its output appended to LOG and shown.
run_step() {
  local name=$1 log=$2 max=$3; shift 3
  local left=$((deadline - SECONDS - 5)) t rc s0
  : >"$tmp/step.out"
  t=$max; ((left < t)) && t=$left
  if ((t < 15)); then
    results+=("$(printf '%-30s SKIPPED (budget spent)' "$name")"); failed+=("$name(skipped)")
    return 1
  fi
  { echo; echo "### $name: timeout ${t}s, $(date -u +%H:%M:%S)"; printf '$'; printf ' %q' "$@"; echo; } | tee -a "$log"
  s0=$SECONDS
  timeout -k 10 "$t" "$@" 2>&1 | tee "$tmp/step.out" >>"$log"
  rc=${PIPESTATUS[0]}
  tail -n 40 "$tmp/step.out"
  local what="ok" skipped
  skipped=$(grep -cE '^\[  SKIPPED \] .*\([0-9]+ ms\)$' "$tmp/step.out")
  if ((rc == 124 || rc == 137)); then what="TIMEOUT"; elif ((rc != 0)); then what="FAILED"
  elif ((skipped > 0)); then what="SKIPS"; rc="$skipped skipped"; fi
  echo "### $name: $what (exit $rc) in $((SECONDS - s0))s" | tee -a "$log"
  results+=("$(printf '%-30s %-7s exit %-3s %4ss  %s' "$name" "$what" "$rc" "$((SECONDS - s0))" "$(basename "$log")")")
  [[ $what == ok ]] || failed+=("$name")
  [[ $what == ok ]]
}
gt=(--gtest_color=no)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

step_env() {
  local log=$OUT/tests.log
  run_step "strata --version" "$log" 20 "${K[@]}" "$B/strata" --version
  run_step "cpu simulate tiny" "$log" 20 "${K[@]}" "$B/strata" simulate --model tiny --cluster local-cpu \
    --dp 1 --tp 1 --pp 1 --micro-batch 2 --global-batch 2 --out "$tmp/tiny.yaml" &&
    run_step "cpu train tiny (MPI singleton)" "$log" 60 "${K[@]}" "$B/strata" train --plan "$tmp/tiny.yaml" --steps 2
}
step_tests() {
  local log=$OUT/tests.log
  run_step "runtime_cuda_gpt_test" "$log" 180 "${K[@]}" "$B/runtime_cuda_gpt_test" "${gt[@]}"
  run_step "kernels_cuda_test" "$log" 120 "${K[@]}" "$B/kernels_cuda_test" "${gt[@]}"
  [[ -x $B/train_cuda_cli_test ]] &&
    run_step "train_cuda_cli_test" "$log" 240 "${K[@]}" "$B/train_cuda_cli_test" "${gt[@]}"
}
step_train() {
  local log=$OUT/train.log plan=$tmp/plan.yaml
  run_step "simulate gpt2-124m h200" "$log" 30 "${K[@]}" "$B/strata" simulate --model gpt2-124m \
    --cluster h200-node --dp 1 --tp 1 --pp 1 --micro-batch 8 --global-batch 8 --out "$plan" &&
    cat "$plan" >>"$log"
  if [[ -f $plan ]]; then
    run_step "train gpt2-124m cuda 20 st" "$log" 180 "${K[@]}" "$B/strata" train --plan "$plan" --backend cuda \
      --steps 20 --metrics "$OUT/train.jsonl"
  else
    results+=("train gpt2-124m cuda 20 st  SKIPPED (no plan)"); failed+=("train(no plan)")
  fi
}
step_bench() {
  run_step "bench_cuda_train gpt2-124m" "$OUT/bench.log" 120 "${K[@]}" "$B/strata_bench_cuda_train" \
    --model gpt2-124m --steps 10
}
step_calibrate() {
  local log=$OUT/calibrate.log
  # --sustain: GEMM rows timed after 20 s of back-to-back GEMMs, at the clocks the GPU holds
  # under load (the published GEMM tables are idle-GPU bursts).
  # DEVICE_CHECK_CALIBRATE_ARGS: the sweep (default: gpt2-124m's GEMMs at tp 1, --quick); e.g.
  # "--model llama3-8b,llama3-70b --tp-degrees 1,2,4,8 --micro-batch 1 --dtypes bf16" for the
  # shapes of the validation rows. DEVICE_CHECK_CALIBRATE_TIMEOUT_S bounds it (default 200).
  local -a cal_args
  read -r -a cal_args <<<"${DEVICE_CHECK_CALIBRATE_ARGS:---quick --model gpt2-124m --tp-degrees 1 --micro-batch 8}"
  # The GEMM shapes stop before the step's timeout (leaving a minute for the collectives and
  # the write), so a sweep larger than the lease still returns every row it measured.
  local cal_timeout=${DEVICE_CHECK_CALIBRATE_TIMEOUT_S:-200} sustain=${DEVICE_CHECK_SUSTAIN_S:-20}
  local gemm_budget=$((cal_timeout - sustain - 60))
  ((gemm_budget < 30)) && gemm_budget=30
  run_step "calibrate cuda ${cal_args[*]} --sustain $sustain --max-gemm-seconds $gemm_budget" "$log" \
    "$cal_timeout" "${K[@]}" "$B/strata" calibrate --backend cuda "${cal_args[@]}" \
    --sustain "$sustain" --max-gemm-seconds "$gemm_budget" --out "$OUT/h200-measured.yaml"
  if [[ -s $OUT/h200-measured.yaml ]]; then
    run_step "simulate with measured" "$log" 30 "${K[@]}" "$B/strata" simulate --model gpt2-124m \
      --cluster h200-node --profile "$OUT/h200-measured.yaml" --dp 1 --tp 1 --pp 1 --micro-batch 8 --global-batch 8
  fi
}
step_sanitizer() {
  local log=$OUT/sanitizer.log cs=""
  cs=$(command -v compute-sanitizer || true)
  if [[ -z $cs ]]; then
    cs=$( { compgen -G '/usr/local/cuda*/bin/compute-sanitizer'
            compgen -G '/usr/local/cuda*/compute-sanitizer/compute-sanitizer'
            compgen -G '/opt/nvidia/*/compute-sanitizer'
            compgen -G '/opt/*/.venv/lib/python3*/site-packages/nvidia/*/compute-sanitizer/compute-sanitizer'
            compgen -G '/opt/*/.venv/lib/python3*/site-packages/nvidia/*/bin/compute-sanitizer'; } | head -1)
  fi
  if [[ -z $cs ]]; then
    echo "compute-sanitizer not found" | tee -a "$log"
    results+=("compute-sanitizer memcheck  SKIPPED (not found)"); failed+=("sanitizer(not found)")
    return 1
  fi
  run_step "compute-sanitizer memcheck" "$log" 240 "$cs" --tool memcheck --error-exitcode 99 --print-limit 50 \
    "${K[@]}" "$B/runtime_cuda_gpt_test" "${gt[@]}" \
    --gtest_filter="${SANITIZER_FILTER:-GptCudaTrainer.Fp32GemmsMatchTheCpuRuntimeStepByStep}"
}

[[ $cuda_ok == 1 ]] || say "WARNING: a CUDA library is missing: the CUDA steps will fail to start"
for s in $steps; do
  if declare -F "step_$s" >/dev/null; then
    say "## step $s ($((deadline - SECONDS))s of the budget left)"
    "step_$s" || true
  else
    say "unknown step $s (known: env tests train bench calibrate sanitizer)"
  fi
done

say "## results ($((SECONDS))s in all)"
for r in "${results[@]}"; do say "  $r"; done
if ((${#failed[@]})); then
  say "FAILED: ${failed[*]}"
  exit 1
fi
say "all steps ok"
