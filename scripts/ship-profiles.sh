#!/usr/bin/env bash
# Re-fits the shipped profiles from the dev sets (bench/validation/runs/) with the built strata:
#   costmodel/hardware/profiles/a100-sxm-80gb-fitted.yaml   A100 rows (megatron-2021 stacks)
#   costmodel/hardware/profiles/h100-sxm-80gb-fitted.yaml   H100 rows (nemo-2024-perf, mcore-2024)
#   costmodel/hardware/profiles/h200-sxm-141gb-fitted.yaml  the H200 measurement (GEMMs under
#       sustained load, memory copy bandwidth) with the losses the H100 rows give once GEMMs are
#       taken as measured (runs/h100-gemm-measured.yaml: same GH100 die, clocks and peaks)
#   bench/validation/profiles/h100-sxm-96gb-500w-fitted.yaml  the TorchTitan H100 rows on the part they
#       ran on (96 GB HBM2e at 500 W, bench/validation/devices; not a catalog device)
# and prints the held-out residual entries for costmodel/stacks/residuals.yaml. Run from
# anywhere after `cmake --build`; STRATA overrides the binary (default build/cli/strata).
set -euo pipefail
cd "$(dirname "$0")/.."
strata=${STRATA:-build/cli/strata}
out=costmodel/hardware/profiles
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
for d in a100-sxm-80gb:a100 h100-sxm-80gb:h100; do
  "$strata" calibrate --from-runs "bench/validation/runs/${d#*:}.yaml" --out "$out/${d%%:*}-fitted.yaml" >"$log/${d#*:}.txt"
  grep -E '^# (training-loss fit|in-sample|held out)' "$log/${d#*:}.txt"
done
# The A100 40GB part of llm-foundry's rows (bench/validation/devices/a100-sxm-40gb.yaml): the A100 fit on
# its own memory and bandwidth (the same SMs, clocks and TDP as the 80GB part the fit saw).
{
  echo "# The A100 fit (costmodel/hardware/profiles/a100-sxm-80gb-fitted.yaml, scripts/ship-profiles.sh) on the"
  echo "# 40GB part: its memory and HBM2 bandwidth, the same SMs, clocks and TDP. No A100 40GB row was fitted."
  sed -e 's/^name: "a100-sxm-80gb"/name: "a100-sxm-40gb"/' \
      -e 's/^memory_gib: 80$/memory_gib: 40/' -e 's/^memory_bandwidth_gbps: 2039$/memory_bandwidth_gbps: 1555/' \
      -e 's/A100 80GB SXM column/A100 40GB SXM column/' -e 's/HBM2e 2039 GB\/s; 80 GB (nvidia-smi: 81920 MiB = 80 GiB)/HBM2 1555 GB\/s; 40 GB/' \
      -e '/^# Written by/d' -e '/^# the measured runs listed/d' -e '/^# --profile on plan/d' \
      "$out/a100-sxm-80gb-fitted.yaml"
} >bench/validation/profiles/a100-sxm-40gb-fitted.yaml
"$strata" calibrate --from-runs bench/validation/runs/torchtitan-h100.yaml \
  --out bench/validation/profiles/h100-sxm-96gb-500w-fitted.yaml >"$log/torchtitan-h100.txt"
grep -E '^# (training-loss fit|in-sample|held out)' "$log/torchtitan-h100.txt"
"$strata" calibrate --from-runs bench/validation/runs/h100-gemm-measured.yaml --out "$log/gh100.yaml" >"$log/gh100.txt"
grep -E '^# (training-loss fit|in-sample|held out)' "$log/gh100.txt"
{
  sed 's/^name: h200-sxm-141gb-measured/name: h200-sxm-141gb-fitted/' "$out/h200-sxm-141gb-measured.yaml"
  echo "# The losses below were fitted on the H100 dev rows with this GEMM table in place of the H100's"
  echo "# (bench/validation/runs/h100-gemm-measured.yaml): no H200 run has been measured against them."
  sed -n '/^training_losses:/,$p' "$log/gh100.yaml"
} >"$out/h200-sxm-141gb-fitted.yaml"
echo "# residual entries (held-out rows) for costmodel/stacks/residuals.yaml:"
grep -h 'profile: fitted' "$log/a100.txt" "$log/h100.txt" "$log/torchtitan-h100.txt"
