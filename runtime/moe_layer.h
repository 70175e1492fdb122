// MoeLayer: the mixture-of-experts MLP of an MoE decoder block (ModelDims::moe_block)
// (Mixtral / Qwen-MoE / DeepSeek / Llama-4), on the block's local token rows (Nl, C):
//
//   out = sum_j w_j * Expert_{e_j}(x)  +  SharedMlp(x)
//
// with (e_j, w_j) the token's top-k experts and renormalised weights (moe_router.h), the
// routed experts spread over the expert-parallel group and reached by all-to-all
// (expert_dispatch.h), and the shared experts an always-on SwiGLU MLP, tensor-parallel
// like the dense MLP (Megatron-Core's SharedExpertMLP). With tp > 1 the block runs with
// sequence parallelism, so each TP rank routes its own Nl = N / tp tokens. With expert
// tensor parallel (etp > 1) each expert's FFN is split over the etp group
// (expert_tensor_parallel.h). No auxiliary load-balancing loss.
#pragma once
#include <string>
#include <vector>

#include "runtime/column_parallel_linear.h"
#include "runtime/expert_dispatch.h"
#include "runtime/expert_mlp.h"
#include "runtime/expert_tensor_parallel.h"
#include "runtime/model_dims.h"
#include "runtime/moe_router.h"
#include "runtime/param_spec.h"
#include "runtime/parameter_store.h"
#include "runtime/row_parallel_linear.h"
#include "runtime/tp_regions.h"

namespace strata::runtime {

// What the MoE MLP keeps between its forward and backward for one micro-batch.
template <typename T>
struct MoeActivations {
  std::vector<T> logits;       // (Nl, E)
  Routing<T> routing;
  DispatchPlan plan;
  std::vector<std::size_t> expert_major;  // received row -> expert-major position
  EtpGather etp;               // the etp group's rows (this rank's own with etp 1)
  std::vector<T> x_exp;        // (Rg, C) rows of the etp group, expert-major
  std::vector<T> h, u, a;      // (Rg, Fe / etp) per expert, expert-major
  std::vector<T> y_tok;        // (Nl * k, C) expert outputs back at their token slots
  std::vector<T> s_in;         // (N, C) shared-expert input (all TP ranks' tokens)
  std::vector<T> s_h, s_u, s_a;  // (N, Fs / tp)
};

template <typename T>
class MoeLayer {
 public:
  // "blocks.<index>.moe.*": router, this rank's routed experts (ParamSpec::expert), the
  // shared experts when the model has them.
  static std::vector<ParamSpec> param_specs(const ModelDims& d, int index);

  // Parameters come from `store`, routed experts from `experts` (the trainer keeps them
  // apart: their gradients are summed over the expert data-parallel group).
  MoeLayer(const ModelDims& d, int index, ParameterStore<T>& store, ParameterStore<T>& experts,
           const TpGroup& tp, const EpGroup& ep);

  // out (Nl, C) = moe(x (Nl, C)).
  void forward(T* out, const T* x, MoeActivations<T>& acts) const;
  // dx (Nl, C) (overwritten) from dout (Nl, C); accumulates parameter gradients.
  void backward(T* dx, const T* dout, const T* x, MoeActivations<T>& acts) const;

 private:
  ModelDims d_;
  TpGroup tp_;
  EpGroup ep_;
  const T* router_ = nullptr;
  T* drouter_ = nullptr;
  std::vector<ExpertMlp<T>> experts_;  // this rank's, local index
  bool shared_ = false;
  ColumnParallelLinear<T> s_gate_, s_up_;
  RowParallelLinear<T> s_down_;
};

}  // namespace strata::runtime
