// MeasuredBlockTable: time of one whole transformer block of the runtime (forward and
// backward for one micro-batch on one tensor-parallel rank, its TP collectives left
// out) from a profile's measured block_table, written by `strata calibrate --model`.
//
// Why a block and not only its kernels: on a CPU rank the kernels of a small model run
// for microseconds each, and the block spends as much again between them (activation
// buffers, copies, head split/merge, cache misses of running each kernel once instead
// of in a loop), and every rank of the machine computes at once. The GEMM and op tables
// time kernels in isolation; the block table times what `strata train` runs, on all
// ranks at once (Galvatron and Alpa profile per-layer times for the same reason).
//
// Rows measured with a real TP group as well (fwd/bwd_with_tp_us) give the block's TP
// communication as the runtime meets it: with-group time minus compute time. On a CPU
// host that is several times what the same collectives cost alone (the ranks wait on
// each other between kernels and share the cores while they do).
//
// Rows are keyed by the block's shape (block_signature: everything of the model spec
// that changes a block's work), the TP degree and sequence parallelism, and form a
// LogLogCurve over the micro-batch size. A model whose blocks were never measured gets
// nothing here and falls back to the per-op sum.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "costmodel/detail/log_log_curve.h"
#include "costmodel/device_profile.h"
#include "costmodel/gemm_cost.h"
#include "models/model_spec.h"

namespace strata::costmodel {

// "hidden 64, heads 4, kv_heads 4, ffn 256, seq 32, layernorm, gelu, learned": the
// shape of one block of `spec` (its layer count, vocabulary and name do not matter).
std::string block_signature(const models::ModelSpec& spec);

struct BlockTableEstimate {
  double fwd_s = 0;  // compute
  double bwd_s = 0;
  TimeSource source = TimeSource::Measured;
  // TP communication inside the block (with-group minus compute, >= 0), when measured.
  bool has_tp = false;
  double tp_fwd_s = 0;
  double tp_bwd_s = 0;
};

class MeasuredBlockTable {
 public:
  // InputError on a row with an empty signature, tp < 1, micro_batch < 1, a
  // non-positive time, or with-group times on a tp = 1 row.
  explicit MeasuredBlockTable(const std::vector<BlockSample>& rows);

  bool empty() const { return curves_.empty(); }
  // nullopt when no row has this signature, tp and sequence parallelism.
  std::optional<BlockTableEstimate> estimate(const std::string& signature, int tp, bool sequence_parallel,
                                             std::int64_t micro_batch) const;

 private:
  using Key = std::tuple<std::string, int, bool>;
  std::map<Key, detail::LogLogCurve> curves_;
  std::map<Key, detail::LogLogCurve> with_tp_;  // rows that have with-group times
};

}  // namespace strata::costmodel
