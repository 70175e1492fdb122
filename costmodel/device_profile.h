// DeviceProfile: what one accelerator (or CPU rank) can do. Datasheet peaks and
// efficiencies, plus optional measured tables written by `strata calibrate`. Every
// section carries its provenance (`source:`), which the planner reports.
//
// YAML format (costmodel/hardware/*.yaml):
//   name: h100-sxm-80gb
//   source: {kind: datasheet, ref: "NVIDIA H100 Tensor Core GPU datasheet, SXM5"}
//   compute_dtype: bf16                   # optional (default bf16): dtype training runs in
//   memory_gib: 80
//   memory_bandwidth_gbps: 3350          # GB/s (1e9 B/s)
//   peak_tflops: {bf16: 989.4, fp16: 989.4, tf32: 494.7, fp32: 66.9}
//   efficiency: {gemm: 0.80, attention: 0.55, memory: 0.85, source: {...}}  # roofline fallback;
//                                         # optional, each in (0, 1]; source optional
//   reserve_gib: 4                        # workspace, fragmentation, framework (optional, >= 0)
//   reserve_source: {kind: estimate, ref: ...}   # optional
//   kernel_overhead_us: 4                 # optional: fixed cost of each non-GEMM kernel
//   kernel_overhead_source: {kind: estimate, ref: ...}   # required with kernel_overhead_us
//   fp8_fast_accum_speedup: 1.15          # optional (default 1, in [1, 2]): FP8 GEMMs with
//                                         # cuBLASLt's fast accumulation against the fp8 rates
//                                         # above (table rows, roofline), timed without it
//   fp8_fast_accum_source: {kind: published, ref: ...}   # required with fp8_fast_accum_speedup
//   default_stack: strata-cpu             # optional: stack when `--stack` is not given
//   sm_count: 132                         # optional: streaming multiprocessors (GPUs), the
//                                         # share of them that overlapped NCCL kernels occupy
//   gemm_table:                           # optional, measured
//     source: {kind: measured, tool: "strata calibrate", host: ..., device: ..., date: ..., ...}
//     rows: [{m: 2048, n: 2048, k: 2048, dtype: bf16, time_us: 25.1}, ...]
//   collective_table:                     # optional, measured
//     source: {...}
//     rows: [{collective: all_reduce, ranks: 8, bytes: 1048576, time_us: 30.2, busbw_gbps: 60.1}, ...]
//     # optional per row: nodes (default 1), trivial (default false); busbw_gbps optional,
//     # checked against bytes * bus_factor / time when given (2% tolerance).
//   op_table:                             # optional, measured: the runtime's own non-GEMM kernels
//     source: {...}
//     rows: [{op: norm, work: 131072, fwd_us: 20.5, bwd_us: 51.0}, ...]
//     # op: a non-GEMM models::OpKind name (embedding, norm, rope, attention_core,
//     # activation, residual, loss); work: the op's size on one rank as OpCost counts it
//     # (costmodel::op_work: bytes moved, or matmul FLOPs for attention_core).
//   block_table:                          # optional, measured: one whole block of the runtime
//     source: {...}
//     rows: [{block: "hidden 64, heads 4, kv_heads 4, ffn 256, seq 32, layernorm, gelu, learned",
//             tp: 2, sp: false, micro_batch: 4, fwd_us: 310.5, bwd_us: 702.0}, ...]
//     # block: costmodel::block_signature of the model; times for one micro-batch on one
//     # TP rank, TP collectives excluded (see costmodel/block_table.h). Optional for tp > 1:
//     # fwd_with_tp_us, bwd_with_tp_us: the same with a real TP group inside one node.
//   training_losses:                      # optional, fitted: costmodel/training_losses.h
//     source: {kind: estimate, tool: "strata calibrate --from-runs", ...}
//     parameters: {gemm_sustain: {value: 0.9, std_error: 0.01, status: fitted}, ...}
//     rows: [...], cross_validation: [...]   # the fit's record, kept verbatim
// `source` maps need `kind` (datasheet | measured | estimate) and at least one more
// field; other keys are free-form scalars (nested maps are flattened to "a.b").
// Unknown top-level keys, non-positive sizes/bandwidths/peaks are errors naming the key.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/collective.h"
#include "costmodel/training_losses.h"

namespace strata::costmodel {

// Fp8: the FP8 tensor-core rate (E4M3 / E5M2 operands, higher-precision accumulation),
// used for the GEMMs a Transformer-Engine FP8 recipe runs in FP8 (costmodel/fp8_linear.h).
enum class DType { Bf16, Fp16, Tf32, Fp32, Fp8 };
const char* to_string(DType d);
DType dtype_from_string(const std::string& s);  // InputError on unknown
inline int dtype_bytes(DType d) {
  if (d == DType::Fp8) return 1;
  return (d == DType::Bf16 || d == DType::Fp16) ? 2 : 4;
}

// Where numbers came from: a datasheet, or a calibration run. Free-form keys are kept
// so the YAML round-trips (host, device, driver, cuda, nccl, blas, mpi, date, commit, method).
struct Provenance {
  std::string kind;                           // "datasheet" | "measured" | "estimate"
  std::map<std::string, std::string> fields;  // ref/url or host/device/date/...
  bool measured() const { return kind == "measured"; }
};

struct GemmSample {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::Bf16;
  double time_us = 0;
};

struct CollectiveSample {
  Collective collective = Collective::AllReduce;
  int ranks = 2;
  int nodes = 1;         // nodes the measured group spanned (YAML optional, default 1)
  std::int64_t bytes = 0;
  double time_us = 0;
  double busbw_gbps = 0;
  bool trivial = false;  // measured with one rank: no data moved, marked as such
};

// One measured non-GEMM op (see op_table above).
struct OpSample {
  std::string op;
  double work = 0;
  double fwd_us = 0;
  double bwd_us = 0;
};

// One measured transformer block (see block_table above).
struct BlockSample {
  std::string block;  // costmodel::block_signature
  int tp = 1;
  bool sequence_parallel = false;
  std::int64_t micro_batch = 1;
  double fwd_us = 0;           // compute only (TP collectives replaced by local stand-ins)
  double bwd_us = 0;
  // With a real TP group of `tp` ranks in one node, all groups at once: compute plus the
  // block's TP collectives as the runtime issues them. 0 = not measured.
  double fwd_with_tp_us = 0;
  double bwd_with_tp_us = 0;
};

// Bandwidths above this (GB/s: 100 TB/s, ~20x today's fastest HBM) are refused as typos
// in device profiles (memory, measured collective busbw) and cluster links.
inline constexpr double kMaxBandwidthGbps = 1e5;

struct DeviceProfile {
  std::string name;
  Provenance source;
  DType compute_dtype = DType::Bf16;  // dtype the runtime trains in on this device
  double memory_gib = 0;
  double memory_bandwidth_gbps = 0;
  std::map<DType, double> peak_tflops;
  double gemm_efficiency = 0.8;       // achieved/peak for roofline fallback
  double attention_efficiency = 0.5;
  // The fused cuDNN attention's fraction (stacks with attention.kernel cudnn) where it
  // differs from FlashAttention-2's, which attention_efficiency describes (on Hopper, cuDNN
  // and FlashAttention-3 use the wgmma/TMA path FlashAttention-2 lacks); 0 = the same.
  double attention_cudnn_efficiency = 0;
  // FlashAttention's first algorithm (stacks with attention.kernel flash1: the CUDA v1 kernels or
  // their Triton port) where a source gives its rate on this device; 0 = FlashAttention-2's.
  double attention_flash1_efficiency = 0;
  double memory_efficiency = 0.85;
  Provenance efficiency_source;       // empty kind: the built-in defaults above
  double reserve_gib = 0;
  Provenance reserve_source;
  // Fixed time of one non-GEMM kernel (launch and tail), microseconds; 0 = not charged.
  double kernel_overhead_us = 0;
  Provenance kernel_overhead_source;
  // How much faster an FP8 GEMM runs with cuBLASLt's fast accumulation
  // (CUBLASLT_MATMUL_DESC_FAST_ACCUM: partial sums kept in the tensor cores' own precision)
  // than the profile's fp8 rates, which are timed without it (torch._scaled_mm's default).
  // The FP8 recipes strata models take it in the forward GEMM only (costmodel/fp8_linear.h);
  // 1 = not charged.
  double fp8_fast_accum_speedup = 1;
  Provenance fp8_fast_accum_source;
  // Software stack assumed when none is named (costmodel/software_stack.h); empty: the
  // newest catalog stack.
  std::string default_stack;
  // Streaming multiprocessors (datasheet / whitepaper); 0 = not a GPU or unknown. NCCL
  // kernels occupy whole SMs, so collectives overlapped with compute slow it by
  // comm_sms / sm_count (LinkSpec::comm_sms).
  int sm_count = 0;
  std::vector<GemmSample> gemm_table;
  Provenance gemm_source;
  std::vector<CollectiveSample> collective_table;
  Provenance collective_source;
  std::vector<OpSample> op_table;
  Provenance op_source;
  std::vector<BlockSample> block_table;
  Provenance block_source;
  // What a long training job loses against these tables (costmodel/training_losses.h):
  // fitted by `strata calibrate --from-runs`; neutral when the profile has no section.
  TrainingLosses training_losses;

  double peak_flops(DType d) const;  // FLOP/s; InputError if the profile lacks the dtype
  // True when the GEMM table was measured under sustained load (`calibrate --sustain`, its
  // provenance says "sustained clocks"): the measurement replaces training_losses'
  // gemm_sustain. effective_gemm_sustain(): 1 then, else the fitted value.
  bool gemm_table_sustained() const;
  double effective_gemm_sustain() const;
};

DeviceProfile parse_device_profile(const std::string& yaml_text, const std::string& source);
std::string to_yaml(const DeviceProfile& p);
// The `op_table:` section alone (empty string for no rows), indented by `indent` spaces;
// `strata calibrate` appends it to a profile it writes.
std::string op_table_yaml(const std::vector<OpSample>& rows, const Provenance& source, int indent = 0);
// The `block_table:` section alone, likewise.
std::string block_table_yaml(const std::vector<BlockSample>& rows, const Provenance& source, int indent = 0);
// Catalog name ("h100-sxm-80gb") or a YAML path.
DeviceProfile load_device_profile(const std::string& name_or_path);
std::vector<std::string> device_catalog_names();
// Measured profiles shipped in costmodel/hardware/profiles (also loadable by name).
std::vector<std::string> profile_catalog_names();

}  // namespace strata::costmodel
