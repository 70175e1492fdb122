// TransformerBlock: one pre-norm decoder block, GPT (LayerNorm, GELU, biases) or Llama
// (RMSNorm, SwiGLU, RoPE, GQA, no biases) as the model spec says, tensor-parallel:
//
//   x2  = x  + RowParallel_proj( attention( ColumnParallel_qkv( enter(norm1(x)) ) ) )
//   out = x2 + RowParallel_down( act( ColumnParallel_up/gate( enter(norm2(x2)) ) ) )
//
// In a mixture-of-experts model's MoE blocks (ModelDims::moe_block: past first_dense_layers,
// every moe.layer_step-th block) the MLP is the MoE MLP (runtime/moe_layer.h):
// out = x2 + moe(norm2(x2)); the other blocks keep the dense MLP of model.ffn.
//
// Residual-stream tensors are (Nl, C) token rows (Nl = N / tp with sequence parallelism,
// else N = micro_batch * seq). Forward and backward are written out (llm.c style).
// Recompute: none keeps every activation; selective drops the attention probabilities
// (B, H, S, S) and rebuilds them in the backward; full keeps only the block input and
// re-runs the forward before the backward. All three give bitwise the same numbers.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "runtime/attention.h"
#include "runtime/column_parallel_linear.h"
#include "runtime/context_parallel.h"
#include "runtime/model_dims.h"
#include "runtime/moe_layer.h"
#include "runtime/param_spec.h"
#include "runtime/parameter_store.h"
#include "runtime/row_parallel_linear.h"
#include "runtime/tp_regions.h"

namespace strata::runtime {

// What one block keeps between its forward and backward for one micro-batch.
template <typename T>
struct BlockActivations {
  std::vector<T> x_in;                       // (Nl, C) block input
  std::vector<T> n1, n1_mean, n1_rstd;       // (Nl, C), (Nl), (Nl) norm1 output and stats
  std::vector<T> n1_full;                    // (N, C) QKV input (all tokens)
  std::vector<T> q, k, v;                    // (B, Hl, S, D), (B, KVl, S, D) after RoPE
                                             // (k, v: the whole sequence with context parallel)
  std::vector<T> probs;                      // (B, Hl, S, S) (recompute none only)
  std::vector<T> o, lse;                     // ring attention: output, row log-sum-exp
  std::vector<T> y;                          // (N, Hl*D) attention output, heads merged
  std::vector<T> x2;                         // (Nl, C) residual after attention
  std::vector<T> n2, n2_mean, n2_rstd;       // norm2
  std::vector<T> n2_full;                    // (N, C) MLP input
  std::vector<T> h;                          // (N, Fl) GELU input, or SwiGLU gate
  std::vector<T> up;                         // (N, Fl) SwiGLU up (empty for GELU)
  std::vector<T> a;                          // (N, Fl) activation output (down-proj input)
  MoeActivations<T> moe;                     // MoE blocks: the MoE MLP's (in place of h, up, a)
  bool complete = false;                     // false: only x_in kept (full recompute)
  void release() { *this = BlockActivations{}; }
};

template <typename T>
class TransformerBlock {
 public:
  // Parameter names are "blocks.<index>.*", index 0..layers-1 (plan layer group index+1).
  static std::vector<ParamSpec> param_specs(const ModelDims& d, int index);

  // `cp`: the context-parallel group when d.cp > 1 (K/V all-gathered for attention).
  // MoE blocks take their routed experts from `experts` (default: `store`) and exchange
  // tokens over `ep`.
  TransformerBlock(const ModelDims& d, int index, ParameterStore<T>& store, const TpGroup& tp,
                   const CpGroup& cp = {}, ParameterStore<T>* experts = nullptr, const EpGroup& ep = {});

  // x_out (Nl, C) = block(x_in (Nl, C)); keeps what the recompute mode says in `acts`.
  void forward(T* x_out, const T* x_in, BlockActivations<T>& acts) const;
  // dx_in (Nl, C) from dx_out (Nl, C); accumulates parameter gradients; releases `acts`.
  void backward(T* dx_in, const T* dx_out, BlockActivations<T>& acts) const;

  int index() const { return index_; }

 private:
  void run_forward(T* x_out, const T* x_in, BlockActivations<T>& acts, bool keep_probs) const;
  void norm_forward(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b) const;
  void norm_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* mean, const T* rstd,
                     const T* w) const;
  void mlp_backward(T* dn2, const T* dx_out, const BlockActivations<T>& a) const;
  AttentionShape attention_shape() const;
  void attend_forward(BlockActivations<T>& a, bool keep_probs) const;
  void attend_backward(std::vector<T>& dq, std::vector<T>& dk, std::vector<T>& dv,
                       const std::vector<T>& d_o, const BlockActivations<T>& a) const;

  ModelDims d_;
  int index_;
  TpGroup tp_;
  CpGroup cp_;
  std::vector<std::size_t> positions_;  // context parallel: local sequence index -> position
  const T *n1_w_, *n1_b_ = nullptr, *n2_w_, *n2_b_ = nullptr;
  T *dn1_w_, *dn1_b_ = nullptr, *dn2_w_, *dn2_b_ = nullptr;
  ColumnParallelLinear<T> qkv_, fc_, gate_;   // fc_ = GELU up-proj or SwiGLU up
  RowParallelLinear<T> proj_, down_;
  std::optional<MoeLayer<T>> moe_;
};

}  // namespace strata::runtime
