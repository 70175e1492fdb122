// GemmCost: time of one GEMM C(m,n) = A(m,k) B(k,n) on one device, from the
// profile's measured table where it covers the shape, else the roofline.
//
// Scheme (all in log space, per dtype; only rows of that dtype are used):
//  1. Exact row (m, n, k, dtype) in the table -> its measured time (source Measured).
//  2. Per-dimension: rows that share two of (m, n, k) with the query and bracket the
//     third (one row below, one above) -> log(time) linear in log(that dimension)
//     between the two nearest bracketing rows (source Interpolated). This is what
//     `strata calibrate` sweeps (tokens m for a fixed weight shape; n or k for TP).
//  3. Otherwise the table becomes a curve log(achieved FLOP/s) vs log(FLOPs) (rows with
//     equal FLOPs averaged in log space), interpolated linearly between the two
//     neighbouring FLOP counts and held at the end's rate outside the table's range;
//     the time is never below the operands' streaming time (bytes / achieved memory
//     bandwidth), so skinny shapes come out memory bound (source Interpolated).
//  4. No rows for the dtype: roofline (source Roofline),
//     max(flops / (peak(dtype) * gemm_efficiency),
//         bytes / (memory_bandwidth * memory_efficiency)),
//     flops = 2mnk, bytes = (mk + kn + mn) * dtype_bytes.
// FP8 (DType::Fp8): the steps above on the fp8 rows, divided by the profile's
//   fp8_fast_accum_speedup for a GEMM run with fast accumulation (Accumulation::Fast: the
//   fp8 rates are timed without it), but never faster than the bf16 time of the same shape
//   times peak(bf16) / peak(fp8) (the datasheet's 2x on Hopper): the catalog's fp8 table is
//   one best-shape row, which step 3 would hold for every shape.
// Steps 2 and 3 return the measured value at a measured point, and between two
// measured points whose times are ordered the result is monotone (log-log linear).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "costmodel/device_profile.h"

namespace strata::costmodel {

// How an FP8 GEMM accumulates its partial sums (cuBLASLt CUBLASLT_MATMUL_DESC_FAST_ACCUM):
// Split promotes them to fp32 at intervals (torch._scaled_mm's default, Transformer Engine's
// and torchao's backward GEMMs), Fast keeps them in the tensor cores (their forward GEMMs).
// Other dtypes ignore it.
enum class Accumulation { Split, Fast };

// Where a predicted time came from; reported next to predictions.
enum class TimeSource { Measured, Interpolated, Roofline };

// The less direct of two sources: what a time built from both parts can claim.
inline TimeSource worse(TimeSource a, TimeSource b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}
const char* to_string(TimeSource s);  // "measured" | "interpolated" | "roofline"

struct GemmEstimate {
  double time_s = 0;
  TimeSource source = TimeSource::Roofline;
};

class GemmCost {
 public:
  // Copies what it needs from the profile (tables indexed once).
  explicit GemmCost(const DeviceProfile& profile);

  // Seconds for one GEMM of this shape; m, n, k >= 1 (InputError otherwise).
  double time_s(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const;
  GemmEstimate estimate(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
                        Accumulation accumulation = Accumulation::Split) const;
  // `batch` independent GEMMs of one shape in one strided-batched call (attention's
  // per-head QK^T and AV): timed as one GEMM of batch*m rows, bounded below by every
  // member's operand traffic.
  GemmEstimate batched(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                       DType dtype) const;
  // True when (m, n, k, dtype) is a row of the measured table.
  bool measured(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const;
  // True when the table has rows for this dtype.
  bool has_table(DType dtype) const;
  // The roofline alone (step 4), for reports and tests.
  double roofline_time_s(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const;

 private:
  // Steps 1-4 for one dtype (estimate() adds the fp8 cap).
  GemmEstimate table_estimate(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const;

  struct Row {
    std::int64_t m, n, k;
    double time_s;
  };
  struct CurvePoint {
    double log_flops;
    double log_flops_per_s;
  };
  struct Table {
    std::vector<Row> rows;
    std::vector<CurvePoint> curve;  // sorted by log_flops, unique
  };
  std::map<DType, Table> tables_;
  std::map<DType, double> peak_flops_;
  double gemm_efficiency_ = 0;
  double sustain_ = 1.0;  // DeviceProfile::effective_gemm_sustain (costmodel/training_losses.h)
  double fp8_fast_accum_speedup_ = 1.0;  // DeviceProfile::fp8_fast_accum_speedup
  double memory_bytes_per_s_ = 0;  // bandwidth * memory_efficiency

  // estimate()'s answers by shape: the planner asks for the same few hundred shapes for
  // every layer-cost table it builds (thousands per search). A pure function of the
  // arguments, so remembering it changes no result; the mutex keeps a GemmCost shared by
  // threads safe (each search thread owns one, so it is never contended there). A copy
  // starts with an empty memo.
  struct Shape {
    std::int64_t m, n, k;
    int dtype, accumulation;
    bool operator==(const Shape&) const = default;
  };
  struct ShapeHash {
    std::size_t operator()(const Shape& s) const;
  };
  struct Memo {
    std::mutex mutex;
    std::unordered_map<Shape, GemmEstimate, ShapeHash> answers;
    Memo() = default;
    Memo(const Memo&) {}
    Memo& operator=(const Memo&) { return *this; }
  };
  mutable Memo memo_;
};

}  // namespace strata::costmodel
