#include "runtime/moe_layer.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/errors.h"
#include "runtime/activation.h"
#include "runtime/expert_capacity.h"
#include "runtime/matmul.h"

namespace strata::runtime {

template <typename T>
std::vector<ParamSpec> MoeLayer<T>::param_specs(const ModelDims& d, int index) {
  STRATA_CHECK(d.moe_block(index), "block {} has no MoE MLP", index);
  const std::string p = fmt::format("blocks.{}.moe.", index);
  const auto C = static_cast<std::int64_t>(d.hidden);
  const auto E = static_cast<std::int64_t>(d.experts());
  const auto Fe = static_cast<std::int64_t>(d.expert_ffn());
  const auto Fs = static_cast<std::int64_t>(d.shared_ffn());
  const auto Fsl = static_cast<std::int64_t>(d.shared_ffn_local());
  const auto t = static_cast<std::int64_t>(d.tp_rank);
  // as the dense MLP: residual projections scaled by 1/sqrt(2 * layers) (GPT-2)
  const double resid_std = 0.02 / std::sqrt(2.0 * static_cast<double>(d.layers));
  std::vector<ParamSpec> out;
  auto matrix = [&](const std::string& name, std::int64_t rows, std::int64_t cols, double std_dev) {
    ParamSpec w;
    w.name = p + name;
    w.rows = rows;
    w.cols = cols;
    w.init_std = std_dev;
    w.weight_decay = true;
    out.push_back(w);
    return &out.back();
  };
  // Replicated over TP; with sequence parallelism each TP rank routes its own tokens.
  matrix("router.weight", E, C, 0.02)->sp_partial_grad = d.sequence_parallel;
  // Expert tensor parallel: gate / up split by rows (column-parallel), down by columns
  // (row-parallel), each etp rank its slice of the FFN width.
  const auto Fel = static_cast<std::int64_t>(d.expert_ffn_local());
  const auto et = static_cast<std::int64_t>(d.etp_rank);
  for (std::size_t e = d.expert_begin(); e < d.expert_begin() + d.experts_local(); ++e) {
    const std::string x = fmt::format("experts.{}.", e);
    for (const char* name : {"gate.weight", "up.weight"}) {
      ParamSpec* w = matrix(x + name, Fe, C, 0.02);
      w->expert = true;
      if (d.etp > 1) w->row_ranges = {{et * Fel, Fel}};
    }
    ParamSpec* w = matrix(x + "down.weight", C, Fe, resid_std);
    w->expert = true;
    if (d.etp > 1) w->col_begin = et * Fel, w->col_count = Fel;
  }
  if (Fs > 0) {
    for (const char* name : {"shared.gate.weight", "shared.up.weight"}) {
      ParamSpec* w = matrix(name, Fs, C, 0.02);
      w->row_ranges = {{t * Fsl, Fsl}};
      w->tp_sharded = true;
    }
    ParamSpec* w = matrix("shared.down.weight", C, Fs, resid_std);
    w->col_begin = t * Fsl;
    w->col_count = Fsl;
    w->tp_sharded = true;
  }
  return out;
}

template <typename T>
MoeLayer<T>::MoeLayer(const ModelDims& d, int index, ParameterStore<T>& store,
                      ParameterStore<T>& experts, const TpGroup& tp, const EpGroup& ep)
    : d_(d), tp_(tp), ep_(ep) {
  STRATA_CHECK(ep.size == d.ep && ep.rank == d.ep_rank, "ep group {} / {} for dims {} / {}", ep.rank, ep.size,
               d.ep_rank, d.ep);
  STRATA_CHECK(ep.etp.size == d.etp && ep.etp.rank == d.etp_rank, "etp group {} / {} for dims {} / {}",
               ep.etp.rank, ep.etp.size, d.etp_rank, d.etp);
  const std::string p = fmt::format("blocks.{}.moe.", index);
  router_ = store.param(p + "router.weight");
  drouter_ = store.grad(p + "router.weight");
  for (std::size_t e = d.expert_begin(); e < d.expert_begin() + d.experts_local(); ++e) {
    const std::string x = fmt::format("{}experts.{}.", p, e);
    ExpertMlp<T> m;
    m.gate = experts.param(x + "gate.weight");
    m.up = experts.param(x + "up.weight");
    m.down = experts.param(x + "down.weight");
    m.dgate = experts.grad(x + "gate.weight");
    m.dup = experts.grad(x + "up.weight");
    m.ddown = experts.grad(x + "down.weight");
    m.hidden = d.hidden;
    m.ffn = d.expert_ffn_local();
    experts_.push_back(m);
  }
  shared_ = d.shared_ffn() > 0;
  if (shared_) {
    s_gate_.w = store.param(p + "shared.gate.weight");
    s_gate_.dw = store.grad(p + "shared.gate.weight");
    s_up_.w = store.param(p + "shared.up.weight");
    s_up_.dw = store.grad(p + "shared.up.weight");
    s_gate_.in = s_up_.in = d.hidden;
    s_gate_.out_local = s_up_.out_local = d.shared_ffn_local();
    s_down_.w = store.param(p + "shared.down.weight");
    s_down_.dw = store.grad(p + "shared.down.weight");
    s_down_.in_local = d.shared_ffn_local();
    s_down_.out = d.hidden;
  }
}

template <typename T>
void MoeLayer<T>::forward(T* out, const T* x, MoeActivations<T>& a) const {
  const std::size_t C = d_.hidden, Nl = d_.local_rows(), N = d_.rows(), E = d_.experts();
  const std::size_t k = d_.top_k(), Fe = d_.expert_ffn_local(), El = d_.experts_local();
  // --- route ---
  a.logits.resize(Nl * E);
  linear_forward(a.logits.data(), x, router_, static_cast<const T*>(nullptr), Nl, C, E);
  a.routing = route_tokens(d_.spec.moe->router, a.logits.data(), Nl, E, k);
  // --- dispatch: (token, slot) rows to the expert's rank ---
  // token dropping (a capacity factor): dropped slots are not sent and add nothing
  a.plan = plan_dispatch(kept_experts(a.routing, E, d_.spec.moe->capacity_factor),
                         static_cast<std::size_t>(ep_.size), El);
  exchange_counts(ep_, a.plan);
  std::vector<T> send(a.plan.rows_sent() * C), recv;
  for (std::size_t i = 0; i < a.plan.rows_sent(); ++i) {
    const std::size_t token = a.plan.send_order[i] / k;
    std::copy_n(x + token * C, C, send.data() + i * C);
  }
  dispatch_rows(ep_, a.plan, send.data(), C, recv);
  const std::size_t R = a.plan.rows_received();
  a.expert_major = expert_major_positions(a.plan);
  std::vector<T> x_own(R * C);
  for (std::size_t i = 0; i < R; ++i) std::copy_n(recv.data() + i * C, C, x_own.data() + a.expert_major[i] * C);
  // --- expert tensor parallel: every etp rank's rows (its own only with etp 1) ---
  a.etp = plan_etp_gather(ep_.etp, a.plan.rows_per_local_expert());
  etp_gather_rows(ep_.etp, a.etp, x_own.data(), C, a.x_exp);
  const std::size_t Rg = a.etp.rows();
  // --- the local experts' FFN slices, each on its contiguous rows ---
  a.h.resize(Rg * Fe);
  a.u.resize(Rg * Fe);
  a.a.resize(Rg * Fe);
  std::vector<T> y_part(Rg * C), y_exp;
  std::size_t at = 0;
  for (std::size_t e = 0; e < El; ++e) {
    const std::size_t rows = a.etp.rows_per_expert[e];
    experts_[e].forward(y_part.data() + at * C, a.x_exp.data() + at * C, rows, a.h.data() + at * Fe,
                        a.u.data() + at * Fe, a.a.data() + at * Fe);
    at += rows;
  }
  // the slices' partial outputs summed, each etp rank its own rows
  etp_reduce_scatter_rows(ep_.etp, a.etp, y_part.data(), C, y_exp);
  // --- combine: back to the senders, weighted sum over each token's slots ---
  for (std::size_t i = 0; i < R; ++i) std::copy_n(y_exp.data() + a.expert_major[i] * C, C, recv.data() + i * C);
  combine_rows(ep_, a.plan, recv.data(), C, send);
  a.y_tok.assign(Nl * k * C, T(0));  // dropped slots stay zero
  for (std::size_t i = 0; i < a.plan.rows_sent(); ++i)
    std::copy_n(send.data() + i * C, C, a.y_tok.data() + a.plan.send_order[i] * C);
  for (std::size_t n = 0; n < Nl; ++n) {
    T* o = out + n * C;
    std::fill_n(o, C, T(0));
    for (std::size_t j = 0; j < k; ++j) {
      const T w = a.routing.weight[n * k + j];
      const T* y = a.y_tok.data() + (n * k + j) * C;
      for (std::size_t c = 0; c < C; ++c) o[c] += w * y[c];
    }
  }
  if (!shared_) return;
  // --- shared experts (tensor-parallel SwiGLU MLP) ---
  const std::size_t Fsl = d_.shared_ffn_local();
  a.s_in.resize(N * C);
  tp::enter_column_forward(tp_, a.s_in.data(), x, Nl * C);
  a.s_h.resize(N * Fsl);
  a.s_u.resize(N * Fsl);
  a.s_a.resize(N * Fsl);
  s_gate_.forward(a.s_h.data(), a.s_in.data(), N);
  s_up_.forward(a.s_u.data(), a.s_in.data(), N);
  swiglu_forward(a.s_a.data(), a.s_h.data(), a.s_u.data(), N * Fsl);
  std::vector<T> s_out(Nl * C);
  s_down_.forward(tp_, s_out.data(), a.s_a.data(), N, Nl);
  for (std::size_t i = 0; i < Nl * C; ++i) out[i] += s_out[i];
}

template <typename T>
void MoeLayer<T>::backward(T* dx, const T* dout, const T* x, MoeActivations<T>& a) const {
  const std::size_t C = d_.hidden, Nl = d_.local_rows(), N = d_.rows(), E = d_.experts();
  const std::size_t k = d_.top_k(), Fe = d_.expert_ffn_local(), El = d_.experts_local();
  const std::size_t R = a.plan.rows_received();
  // --- combine backward: d(weight) and the slots' output gradients, w * dout ---
  std::vector<T> dweight(Nl * k);
  std::vector<T> send(a.plan.rows_sent() * C), recv;
  for (std::size_t n = 0; n < Nl; ++n)
    for (std::size_t j = 0; j < k; ++j) {
      const T* y = a.y_tok.data() + (n * k + j) * C;
      T dot = 0;
      for (std::size_t c = 0; c < C; ++c) dot += dout[n * C + c] * y[c];
      dweight[n * k + j] = dot;
    }
  for (std::size_t i = 0; i < a.plan.rows_sent(); ++i) {
    const std::size_t slot = a.plan.send_order[i], token = slot / k;
    const T w = a.routing.weight[slot];
    for (std::size_t c = 0; c < C; ++c) send[i * C + c] = w * dout[token * C + c];
  }
  // the combine's adjoint is the dispatch exchange
  dispatch_rows(ep_, a.plan, send.data(), C, recv);
  std::vector<T> dy_own(R * C), dy_exp, dx_exp;
  for (std::size_t i = 0; i < R; ++i) std::copy_n(recv.data() + i * C, C, dy_own.data() + a.expert_major[i] * C);
  // the etp reduce-scatter's adjoint is the all-gather, and vice versa
  etp_gather_rows(ep_.etp, a.etp, dy_own.data(), C, dy_exp);
  std::vector<T> dx_part(a.etp.rows() * C);
  std::size_t at = 0;
  for (std::size_t e = 0; e < El; ++e) {
    const std::size_t rows = a.etp.rows_per_expert[e];
    experts_[e].backward(dx_part.data() + at * C, dy_exp.data() + at * C, a.x_exp.data() + at * C,
                         a.h.data() + at * Fe, a.u.data() + at * Fe, a.a.data() + at * Fe, rows);
    at += rows;
  }
  etp_reduce_scatter_rows(ep_.etp, a.etp, dx_part.data(), C, dx_exp);
  // the dispatch's adjoint is the combine exchange; each slot's input gradient adds to its token
  for (std::size_t i = 0; i < R; ++i) std::copy_n(dx_exp.data() + a.expert_major[i] * C, C, recv.data() + i * C);
  combine_rows(ep_, a.plan, recv.data(), C, send);
  std::fill_n(dx, Nl * C, T(0));
  std::vector<T> dx_slot(Nl * k * C);
  for (std::size_t i = 0; i < a.plan.rows_sent(); ++i)
    std::copy_n(send.data() + i * C, C, dx_slot.data() + a.plan.send_order[i] * C);
  for (std::size_t n = 0; n < Nl; ++n)  // slots in order: the same sum on any layout
    for (std::size_t j = 0; j < k; ++j)
      for (std::size_t c = 0; c < C; ++c) dx[n * C + c] += dx_slot[(n * k + j) * C + c];
  // --- router: through the renormalised top-k weights ---
  std::vector<T> dlogits(Nl * E);
  route_tokens_backward(d_.spec.moe->router, dlogits.data(), dweight.data(), a.logits.data(), a.routing, E);
  linear_backward(dx, drouter_, static_cast<T*>(nullptr), dlogits.data(), x, router_, Nl, C, E,
                  /*accumulate_dx=*/true);
  if (shared_) {
    const std::size_t Fsl = d_.shared_ffn_local();
    std::vector<T> da(N * Fsl), dh(N * Fsl), du(N * Fsl), ds_in(N * C), ds(Nl * C);
    s_down_.backward(tp_, da.data(), dout, a.s_a.data(), N, Nl);
    swiglu_backward(dh.data(), du.data(), a.s_h.data(), a.s_u.data(), da.data(), N * Fsl);
    s_gate_.backward(ds_in.data(), dh.data(), a.s_in.data(), N, false);
    s_up_.backward(ds_in.data(), du.data(), a.s_in.data(), N, true);
    tp::enter_column_backward(tp_, ds.data(), ds_in.data(), Nl * C);
    for (std::size_t i = 0; i < Nl * C; ++i) dx[i] += ds[i];
  }
  a = MoeActivations<T>{};
}

template class MoeLayer<float>;
template class MoeLayer<double>;

}  // namespace strata::runtime
