#include "costmodel/op_cost.h"

#include <algorithm>

#include "common/errors.h"

namespace strata::costmodel {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

TimeSource worse(TimeSource a, TimeSource b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

// Memory-bound ops: the divisor of the op's unsharded bytes on one rank.
double bytes_divisor(const models::Op& op, int tp, bool sequence_parallel) {
  if (op.kind == models::OpKind::Embedding) return 1;
  if (op.sharding != models::Sharding::Replicated) return tp;
  return sequence_parallel ? tp : 1;
}

}  // namespace

double op_work(const models::Op& op, int tp, bool sequence_parallel, DType dtype) {
  if (tp < 1) input_error("tp ({}) must be >= 1", tp);
  if (models::is_gemm(op.kind)) return 0;
  if (op.kind == models::OpKind::AttentionCore) return op.flops_fwd / tp;
  return op.bytes_fwd * (dtype_bytes(dtype) / 2.0) / bytes_divisor(op, tp, sequence_parallel);
}

OpCost::OpCost(const DeviceProfile& profile)
    : gemm_(profile),
      ops_(profile.op_table),
      memory_bytes_per_s_(profile.memory_bandwidth_gbps * 1e9 * profile.memory_efficiency) {
  for (const auto& [d, tf] : profile.peak_tflops)
    attention_flops_per_s_[d] = tf * 1e12 * profile.attention_efficiency;
}

OpTime OpCost::time(const models::Op& op, int tp, bool sequence_parallel, DType dtype) const {
  if (tp < 1) input_error("tp ({}) must be >= 1", tp);
  OpTime t;
  using models::Sharding;

  if (models::is_gemm(op.kind)) {
    std::int64_t m = op.gemm.m, n = op.gemm.n, k = op.gemm.k;
    switch (op.sharding) {
      case Sharding::ColumnParallel:
      case Sharding::VocabParallel:
      case Sharding::HeadParallel: n = ceil_div(n, tp); break;
      case Sharding::RowParallel: k = ceil_div(k, tp); break;
      case Sharding::Replicated:
        if (sequence_parallel) m = ceil_div(m, tp);
        break;
    }
    GemmEstimate fwd = gemm_.estimate(m, n, k, dtype);
    GemmEstimate dgrad = gemm_.estimate(m, k, n, dtype);  // dX(m,k) = dY(m,n) W^T(n,k)
    GemmEstimate wgrad = gemm_.estimate(k, n, m, dtype);  // dW(k,n) = X^T(k,m) dY(m,n)
    t.fwd_s = fwd.time_s;
    t.bwd_s = dgrad.time_s + wgrad.time_s;
    t.source = worse(fwd.source, worse(dgrad.source, wgrad.source));
    return t;
  }

  if (ops_.has(op.kind)) {
    const auto e = ops_.estimate(op.kind, op_work(op, tp, sequence_parallel, dtype));
    t.fwd_s = e->fwd_s;
    t.bwd_s = e->bwd_s;
    t.source = e->source;
    return t;
  }

  if (op.kind == models::OpKind::AttentionCore) {
    auto it = attention_flops_per_s_.find(dtype);
    if (it == attention_flops_per_s_.end())
      input_error("device profile has no peak_tflops.{} for attention", to_string(dtype));
    double flops = op.flops_fwd * kCausalAttentionFraction / tp;
    t.fwd_s = flops / it->second;
    t.bwd_s = kFlashBackwardFlopsRatio * t.fwd_s;
    t.source = TimeSource::Roofline;
    return t;
  }

  // Memory-bound ops. Op bytes are for a 2-byte dtype; scale for fp32/tf32 training.
  const double scale = (dtype_bytes(dtype) / 2.0) / bytes_divisor(op, tp, sequence_parallel);
  const double bwd_bytes = op.bytes_bwd > 0 ? op.bytes_bwd : kElementwiseBackwardBytesRatio * op.bytes_fwd;
  t.fwd_s = op.bytes_fwd * scale / memory_bytes_per_s_;
  t.bwd_s = bwd_bytes * scale / memory_bytes_per_s_;
  t.source = TimeSource::Roofline;
  return t;
}

}  // namespace strata::costmodel
