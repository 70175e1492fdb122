#include "costmodel/op_cost.h"

#include <algorithm>

#include "common/errors.h"
#include "costmodel/cross_entropy_cost.h"
#include "costmodel/eager_elementwise.h"
#include "costmodel/fp8_linear.h"

namespace strata::costmodel {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

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

models::GemmShape sharded_gemm(const models::Op& op, int tp, bool sequence_parallel) {
  models::GemmShape g = op.gemm;
  switch (op.sharding) {
    case models::Sharding::ColumnParallel:
    case models::Sharding::VocabParallel:
    case models::Sharding::HeadParallel: g.n = ceil_div(g.n, tp); break;
    case models::Sharding::RowParallel: g.k = ceil_div(g.k, tp); break;
    case models::Sharding::Replicated:
      if (sequence_parallel) g.m = ceil_div(g.m, tp);
      break;
  }
  return g;
}

double attention_efficiency(const DeviceProfile& device, AttentionKernel kernel) {
  if (kernel == AttentionKernel::Cudnn && device.attention_cudnn_efficiency > 0) return device.attention_cudnn_efficiency;
  if (kernel == AttentionKernel::Flash1 && device.attention_flash1_efficiency > 0) return device.attention_flash1_efficiency;
  return device.attention_efficiency;
}

OpCostOptions op_cost_options(const SoftwareStack& stack, const DeviceProfile& device, models::Norm norm) {
  OpCostOptions o;
  o.rms_norm = norm == models::Norm::RmsNorm;
  o.fused_rope = stack.fused_rope;
  o.attention_layout_copies = stack.attention_layout_copies;
  o.attention = stack.attention;
  o.softmax_fused = stack.softmax_fused;
  o.attention_dropout = stack.attention_dropout;
  o.fused_bias_gelu = stack.fused_bias_gelu;
  o.fused_bias_dropout_add = stack.fused_bias_dropout_add;
  o.fused_layernorm = stack.fused_layernorm;
  o.fused_cross_entropy = stack.fused_cross_entropy;
  o.kernel_overhead_s =
      (stack.kernel_overhead_us >= 0 ? stack.kernel_overhead_us : device.kernel_overhead_us) * 1e-6;
  o.host_gap_s = device.training_losses.host_gap_s();
  return o;
}

KernelCount kernel_count(const models::Op& op, const OpCostOptions& o) {
  using models::OpKind;
  switch (op.kind) {
    case OpKind::Embedding: return {1, 1};
    // Fused (or PyTorch's native layer_norm): one forward kernel, backward dx and
    // dgamma/dbeta; an RMSNorm composed of tensor ops: costmodel/eager_elementwise.h.
    case OpKind::Norm:
      if (!o.fused_layernorm && o.rms_norm) return {kComposedRmsNorm.fwd_kernels, kComposedRmsNorm.bwd_kernels};
      return {1, 2};
    case OpKind::Rope:  // Q and K
      if (!o.fused_rope) return {2 * kComplexRope.fwd_kernels, 2 * kComplexRope.bwd_kernels};
      return {2, 2};
    case OpKind::AttentionCore: {
      if (o.attention != AttentionKernel::Unfused) {  // flash bwd: preprocess + main
        if (!o.attention_layout_copies) return {1, 2};
        const AttentionCopyWork c = attention_layout_copies(1, static_cast<double>(op.attention.heads),
                                                           static_cast<double>(op.attention.kv_heads));
        return {1 + c.fwd_kernels, 2 + c.bwd_kernels};
      }
      const int softmax = o.softmax_fused ? 1 : 3;
      const int dropout = o.attention_dropout > 0 ? 1 : 0;
      return {softmax + dropout + 1, softmax + dropout + 1};  // + the context copy
    }
    case OpKind::Activation: return o.fused_bias_gelu ? KernelCount{1, 1} : KernelCount{2, 2};
    case OpKind::Residual: return o.fused_bias_dropout_add ? KernelCount{1, 1} : KernelCount{3, 2};
    case OpKind::Loss: {  // costmodel/cross_entropy_cost.h (bf16 logits: with the casts)
      const CrossEntropyWork w = cross_entropy_work(o.fused_cross_entropy, 2);
      return {w.fwd_kernels, w.bwd_kernels};
    }
    default: return {0, 0};            // GEMMs
  }
}

OpCost::OpCost(const DeviceProfile& profile, const OpCostOptions& options)
    : gemm_(profile),
      ops_(profile.op_table),
      memory_bytes_per_s_(profile.memory_bandwidth_gbps * 1e9 * profile.memory_efficiency *
                          profile.training_losses.memory_sustain()),
      options_(options) {
  const double efficiency = attention_efficiency(profile, options.attention);
  for (const auto& [d, tf] : profile.peak_tflops)
    attention_flops_per_s_[d] = tf * 1e12 * efficiency * profile.training_losses.attention_sustain();
}

OpTime OpCost::time(const models::Op& op, int tp, bool sequence_parallel, DType dtype) const {
  if (tp < 1) input_error("tp ({}) must be >= 1", tp);
  OpTime t;
  using models::Sharding;

  if (models::is_gemm(op.kind)) {
    const models::GemmShape g = sharded_gemm(op, tp, sequence_parallel);
    const std::int64_t m = g.m, n = g.n, k = g.k;
    // Transformer Engine and torchao run the FP8 forward GEMM with fast accumulation and the
    // two backward ones without (costmodel/fp8_linear.h).
    GemmEstimate fwd = gemm_.estimate(m, n, k, dtype, Accumulation::Fast);
    GemmEstimate dgrad = gemm_.estimate(m, k, n, dtype);  // dX(m,k) = dY(m,n) W^T(n,k)
    GemmEstimate wgrad = gemm_.estimate(k, n, m, dtype);  // dW(k,n) = X^T(k,m) dY(m,n)
    // A grouped GEMM (experts) runs op.gemm_count GEMMs of this shape.
    const double count = static_cast<double>(op.gemm_count);
    t.fwd_s = count * (fwd.time_s + options_.host_gap_s);
    t.bwd_s = count * (dgrad.time_s + wgrad.time_s + 2 * options_.host_gap_s);
    t.source = worse(fwd.source, worse(dgrad.source, wgrad.source));
    if (dtype == DType::Fp8) {  // the casts to FP8 around the GEMMs (costmodel/fp8_linear.h)
      const Fp8CastWork c = fp8_activation_casts(m, n, k);
      t.fwd_s += c.fwd_bytes / memory_bytes_per_s_ + c.fwd_kernels * per_kernel_s();
      t.bwd_s += c.bwd_bytes / memory_bytes_per_s_ + c.bwd_kernels * per_kernel_s();
    }
    return t;
  }

  if (ops_.has(op.kind)) {
    const auto e = ops_.estimate(op.kind, op_work(op, tp, sequence_parallel, dtype));
    t.fwd_s = e->fwd_s;
    t.bwd_s = e->bwd_s;
    t.source = e->source;
    return t;
  }

  const KernelCount kc = kernel_count(op, options_);
  const double over_fwd = kc.fwd * per_kernel_s();
  const double over_bwd = kc.bwd * per_kernel_s();
  if (op.kind == models::OpKind::AttentionCore && options_.attention == AttentionKernel::Unfused) {
    t = unfused_attention(op, tp, dtype);
    t.fwd_s += over_fwd;
    t.bwd_s += over_bwd;
    return t;
  }
  if (op.kind == models::OpKind::AttentionCore) {
    auto it = attention_flops_per_s_.find(dtype);
    if (it == attention_flops_per_s_.end())
      input_error("device profile has no peak_tflops.{} for attention", to_string(dtype));
    double flops = op.flops_fwd * kCausalAttentionFraction / tp;
    t.fwd_s = flops / it->second + over_fwd;
    t.bwd_s = kFlashBackwardFlopsRatio * (flops / it->second) + over_bwd;
    if (options_.attention_layout_copies) {  // kernels in over_fwd / over_bwd
      const models::AttentionShape& a = op.attention;
      const double heads = static_cast<double>(ceil_div(a.heads, tp));
      const double kv_heads = static_cast<double>(ceil_div(a.kv_heads > 0 ? a.kv_heads : a.heads, tp));
      const double d = static_cast<double>(a.head_dim);
      const AttentionCopyWork c = attention_layout_copies(static_cast<double>(a.batch * a.seq), heads * d, kv_heads * d);
      const double scale = dtype_bytes(dtype) / 2.0;
      t.fwd_s += c.fwd_bytes * scale / memory_bytes_per_s_;
      t.bwd_s += c.bwd_bytes * scale / memory_bytes_per_s_;
    }
    t.source = TimeSource::Roofline;
    return t;
  }

  if (op.kind == models::OpKind::Loss && op.logits > 0) {
    const CrossEntropyWork w = cross_entropy_work(options_.fused_cross_entropy, std::max<double>(2, dtype_bytes(dtype)));
    const double logits = op.logits / tp;  // vocab-parallel: V/tp logits per token
    t.fwd_s = logits * w.fwd_bytes_per_logit / memory_bytes_per_s_ + w.fwd_kernels * per_kernel_s();
    t.bwd_s = logits * w.bwd_bytes_per_logit / memory_bytes_per_s_ + w.bwd_kernels * per_kernel_s();
    t.source = TimeSource::Roofline;
    return t;
  }

  // Memory-bound ops. Op bytes are for a 2-byte dtype; scale for fp32/tf32 training.
  const double scale = (dtype_bytes(dtype) / 2.0) / bytes_divisor(op, tp, sequence_parallel);
  double fwd_bytes = op.bytes_fwd;
  double bwd_bytes = op.bytes_bwd > 0 ? op.bytes_bwd : kElementwiseBackwardBytesRatio * op.bytes_fwd;
  // Unfused bias + GeLU and bias + dropout + add: each extra kernel re-reads and rewrites
  // the tensor (the bias add of the GEMM output, the dropout output before the add).
  if ((op.kind == models::OpKind::Activation && !options_.fused_bias_gelu) ||
      (op.kind == models::OpKind::Residual && !options_.fused_bias_dropout_add)) {
    fwd_bytes *= 2;
    bwd_bytes *= 1.5;
  }
  // Eager compositions (costmodel/eager_elementwise.h) against the fused op's 4 B forward
  // and 8 B backward per element.
  if (op.kind == models::OpKind::Norm && !options_.fused_layernorm && options_.rms_norm) {
    fwd_bytes *= kComposedRmsNorm.fwd_bytes_per_element / 4.0;
    bwd_bytes *= kComposedRmsNorm.bwd_bytes_per_element / 8.0;
  }
  if (op.kind == models::OpKind::Rope && !options_.fused_rope) {
    fwd_bytes *= kComplexRope.fwd_bytes_per_element / 4.0;
    bwd_bytes *= kComplexRope.bwd_bytes_per_element / 8.0;
  }
  t.fwd_s = fwd_bytes * scale / memory_bytes_per_s_ + over_fwd;
  t.bwd_s = bwd_bytes * scale / memory_bytes_per_s_ + over_bwd;
  t.source = TimeSource::Roofline;
  return t;
}

OpTime OpCost::unfused_attention(const models::Op& op, int tp, DType dtype) const {
  const models::AttentionShape& a = op.attention;
  const std::int64_t heads = ceil_div(a.heads, tp);
  const std::int64_t batch = a.batch * heads;  // one (sequence, head) pair per GEMM
  const std::int64_t s = a.seq, d = a.head_dim;
  const GemmEstimate scores = gemm_.batched(batch, s, s, d, dtype);   // QK^T; and dP = dO V^T
  const GemmEstimate context = gemm_.batched(batch, s, d, s, dtype);  // PV; and dV, dQ, dK
  const double elem = static_cast<double>(dtype_bytes(dtype));
  const double score_elems = static_cast<double>(batch) * static_cast<double>(s) * static_cast<double>(s);
  const double softmax_fwd = (options_.softmax_fused ? 2.0 : 6.0) * elem * score_elems;
  const double softmax_bwd = 3.0 * elem * score_elems;
  const double dropout = options_.attention_dropout > 0 ? (2.0 * elem + 1.0) * score_elems : 0.0;
  const double copy = 2.0 * elem * static_cast<double>(batch) * static_cast<double>(s) * static_cast<double>(d);
  OpTime t;
  t.fwd_s = scores.time_s + context.time_s + (softmax_fwd + dropout + copy) / memory_bytes_per_s_;
  t.bwd_s = scores.time_s + 3.0 * context.time_s + (softmax_bwd + dropout + copy) / memory_bytes_per_s_;
  t.source = worse(scores.source, context.source);
  return t;
}

}  // namespace strata::costmodel
