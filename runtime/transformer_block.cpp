#include "runtime/transformer_block.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "common/errors.h"
#include "runtime/activation.h"
#include "runtime/norm.h"
#include "runtime/ring_attention.h"
#include "runtime/rope.h"

namespace strata::runtime {

template <typename T>
std::vector<ParamSpec> TransformerBlock<T>::param_specs(const ModelDims& d, int index) {
  const std::string p = fmt::format("blocks.{}.", index);
  const auto C = static_cast<std::int64_t>(d.hidden);
  const auto t = static_cast<std::int64_t>(d.tp_rank);
  const auto Dq = static_cast<std::int64_t>(d.heads * d.head_dim);
  const auto Dkv = static_cast<std::int64_t>(d.kv_heads * d.head_dim);
  const auto Dql = static_cast<std::int64_t>(d.q_width_local());
  const auto Dkvl = static_cast<std::int64_t>(d.kv_width_local());
  const auto F = static_cast<std::int64_t>(d.ffn), Fl = static_cast<std::int64_t>(d.ffn_local());
  // GPT-2: residual projections scaled by 1/sqrt(2 * layers)
  const double resid_std = 0.02 / std::sqrt(2.0 * static_cast<double>(d.layers));
  std::vector<ParamSpec> out;

  auto vector_param = [&](const std::string& name, ParamInit init) {
    ParamSpec s;
    s.name = p + name;
    s.rows = C;
    s.init = init;
    s.sp_partial_grad = d.sequence_parallel;
    out.push_back(s);
  };
  auto column_weight = [&](const std::string& name, std::int64_t rows,
                           std::vector<std::pair<std::int64_t, std::int64_t>> ranges, bool bias) {
    ParamSpec w;
    w.name = p + name + ".weight";
    w.rows = rows;
    w.cols = C;
    w.row_ranges = ranges;
    w.weight_decay = true;
    w.tp_sharded = true;
    out.push_back(w);
    if (bias) {
      ParamSpec b;
      b.name = p + name + ".bias";
      b.rows = rows;
      b.row_ranges = ranges;
      b.init = ParamInit::Zeros;
      b.tp_sharded = true;
      out.push_back(b);
    }
  };
  auto row_weight = [&](const std::string& name, std::int64_t in, std::int64_t in_local, bool bias) {
    ParamSpec w;
    w.name = p + name + ".weight";
    w.rows = C;
    w.cols = in;
    w.col_begin = t * in_local;
    w.col_count = in_local;
    w.init_std = resid_std;
    w.weight_decay = true;
    w.tp_sharded = true;
    out.push_back(w);
    if (bias) vector_param(name + ".bias", ParamInit::Zeros);
  };

  const bool bias = d.has_bias();
  vector_param("norm1.weight", ParamInit::Ones);
  if (d.layernorm()) vector_param("norm1.bias", ParamInit::Zeros);
  column_weight("attn.qkv", Dq + 2 * Dkv,
                {{t * Dql, Dql}, {Dq + t * Dkvl, Dkvl}, {Dq + Dkv + t * Dkvl, Dkvl}}, bias);
  row_weight("attn.proj", Dq, Dql, bias);
  vector_param("norm2.weight", ParamInit::Ones);
  if (d.layernorm()) vector_param("norm2.bias", ParamInit::Zeros);
  if (d.moe_block(index)) {
    for (auto& spec : MoeLayer<T>::param_specs(d, index)) out.push_back(std::move(spec));
  } else if (d.gelu()) {
    column_weight("mlp.fc", F, {{t * Fl, Fl}}, bias);
    row_weight("mlp.proj", F, Fl, bias);
  } else {
    column_weight("mlp.gate", F, {{t * Fl, Fl}}, bias);
    column_weight("mlp.up", F, {{t * Fl, Fl}}, bias);
    row_weight("mlp.down", F, Fl, bias);
  }
  return out;
}

template <typename T>
TransformerBlock<T>::TransformerBlock(const ModelDims& d, int index, ParameterStore<T>& store,
                                      const TpGroup& tp, const CpGroup& cp,
                                      ParameterStore<T>* experts, const EpGroup& ep)
    : d_(d), index_(index), tp_(tp), cp_(cp) {
  if (d.cp > 1) {
    STRATA_CHECK(cp.comm != nullptr && cp.size == d.cp && cp.rank == d.cp_rank, "cp group");
    for (std::size_t t = 0; t < d.seq; ++t) positions_.push_back(d.position(t));
  }
  const std::string p = fmt::format("blocks.{}.", index);
  auto prm = [&](const std::string& n) { return store.param(p + n); };
  auto grd = [&](const std::string& n) { return store.grad(p + n); };
  const bool bias = d.has_bias();
  n1_w_ = prm("norm1.weight");
  dn1_w_ = grd("norm1.weight");
  n2_w_ = prm("norm2.weight");
  dn2_w_ = grd("norm2.weight");
  if (d.layernorm()) {
    n1_b_ = prm("norm1.bias");
    dn1_b_ = grd("norm1.bias");
    n2_b_ = prm("norm2.bias");
    dn2_b_ = grd("norm2.bias");
  }
  // A linear layer's weight and (when the model has biases) bias, with their gradients.
  auto bind_params = [&](auto& l, const std::string& n) {
    l.w = prm(n + ".weight");
    l.dw = grd(n + ".weight");
    if (bias) {
      l.b = prm(n + ".bias");
      l.db = grd(n + ".bias");
    }
  };
  auto column = [&](ColumnParallelLinear<T>& l, const std::string& n, std::size_t out_local) {
    bind_params(l, n);
    l.in = d.hidden;
    l.out_local = out_local;
  };
  auto row = [&](RowParallelLinear<T>& l, const std::string& n, std::size_t in_local) {
    bind_params(l, n);
    l.in_local = in_local;
    l.out = d.hidden;
  };
  column(qkv_, "attn.qkv", d.qkv_width_local());
  row(proj_, "attn.proj", d.q_width_local());
  if (d.moe_block(index)) {
    moe_.emplace(d, index, store, experts != nullptr ? *experts : store, tp, ep);
  } else if (d.gelu()) {
    column(fc_, "mlp.fc", d.ffn_local());
    row(down_, "mlp.proj", d.ffn_local());
  } else {
    column(gate_, "mlp.gate", d.ffn_local());
    column(fc_, "mlp.up", d.ffn_local());
    row(down_, "mlp.down", d.ffn_local());
  }
}

template <typename T>
AttentionShape TransformerBlock<T>::attention_shape() const {
  AttentionShape s;
  s.batch = d_.batch;
  s.heads = d_.heads_local();
  s.kv_heads = d_.kv_heads_local();
  s.seq = d_.seq;
  s.head_dim = d_.head_dim;
  if (d_.cp > 1 && cp_.exchange == CpKvExchange::AllGather) {  // against the whole sequence's keys
    s.kv_seq = d_.full_seq;
    s.q_positions = positions_.data();
  }
  return s;
}

template <typename T>
void TransformerBlock<T>::norm_forward(T* y, T* mean, T* rstd, const T* x, const T* w,
                                       const T* b) const {
  if (d_.layernorm()) layernorm_forward(y, mean, rstd, x, w, b, d_.local_rows(), d_.hidden);
  else rmsnorm_forward(y, rstd, x, w, d_.local_rows(), d_.hidden);
}

template <typename T>
void TransformerBlock<T>::norm_backward(T* dx, T* dw, T* db, const T* dy, const T* x,
                                        const T* mean, const T* rstd, const T* w) const {
  if (d_.layernorm()) layernorm_backward(dx, dw, db, dy, x, mean, rstd, w, d_.local_rows(), d_.hidden);
  else rmsnorm_backward(dx, dw, dy, x, rstd, w, d_.local_rows(), d_.hidden);
}

template <typename T>
void TransformerBlock<T>::forward(T* x_out, const T* x_in, BlockActivations<T>& acts) const {
  if (d_.recompute == planner::Recompute::Full) {
    BlockActivations<T> scratch;
    run_forward(x_out, x_in, scratch, /*keep_probs=*/false);
    acts.release();
    acts.x_in = std::move(scratch.x_in);
    acts.complete = false;
    return;
  }
  run_forward(x_out, x_in, acts, d_.recompute == planner::Recompute::None);
}

// The attention core on q, k, v (after RoPE) -> a.y (N, Hl*D). Context parallel: ring
// attention keeps o and the row log-sum-exp; all-gather replaces a.k, a.v with the whole
// sequence's keys and values.
template <typename T>
void TransformerBlock<T>::attend_forward(BlockActivations<T>& a, bool keep_probs) const {
  const AttentionShape as = attention_shape();
  std::vector<T> o(a.q.size());  // (B, Hl, S, D)
  a.probs.clear();
  if (d_.cp > 1 && cp_.exchange == CpKvExchange::Ring) {
    if constexpr (std::is_same_v<T, float>) {
      a.lse.resize(as.batch * as.heads * as.seq);
      ring_attention_forward(cp_, d_.full_seq, as, a.q.data(), a.k.data(), a.v.data(), o.data(),
                             a.lse.data());
      a.o = o;
    } else {
      STRATA_CHECK(false, "context parallel runs in float only");
    }
  } else {
    if (d_.cp > 1) {  // every rank's keys and values, in position order
      std::vector<T> k_full(as.batch * as.kv_heads * as.keys() * as.head_dim), v_full(k_full.size());
      cp_gather_kv(cp_, d_.full_seq, as.batch * as.kv_heads, as.head_dim, a.k.data(), a.v.data(),
                   k_full.data(), v_full.data());
      a.k = std::move(k_full);
      a.v = std::move(v_full);
    }
    if (keep_probs) a.probs.resize(as.batch * as.heads * as.seq * as.keys());
    attention_forward(o.data(), keep_probs ? a.probs.data() : nullptr, a.q.data(), a.k.data(),
                      a.v.data(), as);
  }
  a.y.resize(d_.rows() * as.q_width());
  merge_heads_forward(a.y.data(), o.data(), as);
}

// dq (B, Hl, S, D), dk, dv (B, KVl, S, D) of this rank's tokens from d_o.
template <typename T>
void TransformerBlock<T>::attend_backward(std::vector<T>& dq, std::vector<T>& dk,
                                          std::vector<T>& dv, const std::vector<T>& d_o,
                                          const BlockActivations<T>& a) const {
  const AttentionShape as = attention_shape();
  const std::size_t local_kv = as.batch * as.kv_heads * as.seq * as.head_dim;
  dq.resize(a.q.size());
  if (d_.cp > 1 && cp_.exchange == CpKvExchange::Ring) {
    dk.resize(local_kv);
    dv.resize(local_kv);
    if constexpr (std::is_same_v<T, float>)
      ring_attention_backward(cp_, d_.full_seq, as, a.q.data(), a.k.data(), a.v.data(), a.o.data(),
                              a.lse.data(), d_o.data(), dq.data(), dk.data(), dv.data());
    return;
  }
  std::vector<T> dk_all(a.k.size()), dv_all(a.v.size());
  attention_backward(dq.data(), dk_all.data(), dv_all.data(), d_o.data(),
                     a.probs.empty() ? nullptr : a.probs.data(), a.q.data(), a.k.data(),
                     a.v.data(), as);
  if (d_.cp == 1) {
    dk = std::move(dk_all);
    dv = std::move(dv_all);
    return;
  }
  // the key/value gradients of this rank's positions, summed over CP
  dk.resize(local_kv);
  dv.resize(local_kv);
  cp_reduce_scatter_dkv(cp_, d_.full_seq, as.batch * as.kv_heads, as.head_dim, dk_all.data(),
                        dv_all.data(), dk.data(), dv.data());
}

template <typename T>
void TransformerBlock<T>::run_forward(T* x_out, const T* x_in, BlockActivations<T>& a,
                                      bool keep_probs) const {
  const std::size_t C = d_.hidden, N = d_.rows(), Nl = d_.local_rows();
  const std::size_t Fl = d_.ffn_local();
  const AttentionShape as = attention_shape();

  a.x_in.assign(x_in, x_in + Nl * C);
  // --- attention: x2 = x + proj(attn(qkv(enter(norm1(x))))) ---
  a.n1.resize(Nl * C);
  a.n1_mean.resize(Nl);
  a.n1_rstd.resize(Nl);
  norm_forward(a.n1.data(), a.n1_mean.data(), a.n1_rstd.data(), x_in, n1_w_, n1_b_);
  a.n1_full.resize(N * C);
  tp::enter_column_forward(tp_, a.n1_full.data(), a.n1.data(), Nl * C);
  std::vector<T> qkv(N * as.qkv_width());  // (N, (Hl + 2 KVl) D)
  qkv_.forward(qkv.data(), a.n1_full.data(), N);
  a.q.resize(as.batch * as.heads * as.seq * as.head_dim);
  a.k.resize(as.batch * as.kv_heads * as.seq * as.head_dim);
  a.v.resize(a.k.size());
  split_heads_forward(a.q.data(), a.k.data(), a.v.data(), qkv.data(), as);
  const std::size_t* pos = positions_.empty() ? nullptr : positions_.data();
  if (d_.rope()) {
    rope_forward(a.q.data(), as.batch * as.heads, as.seq, as.head_dim, pos);
    rope_forward(a.k.data(), as.batch * as.kv_heads, as.seq, as.head_dim, pos);
  }
  attend_forward(a, keep_probs);
  std::vector<T> attn_out(Nl * C);
  proj_.forward(tp_, attn_out.data(), a.y.data(), N, Nl);
  a.x2.resize(Nl * C);
  for (std::size_t i = 0; i < Nl * C; ++i) a.x2[i] = x_in[i] + attn_out[i];

  // --- MLP: out = x2 + down(act(up(enter(norm2(x2))))) ---
  a.n2.resize(Nl * C);
  a.n2_mean.resize(Nl);
  a.n2_rstd.resize(Nl);
  norm_forward(a.n2.data(), a.n2_mean.data(), a.n2_rstd.data(), a.x2.data(), n2_w_, n2_b_);
  if (moe_) {
    std::vector<T> moe_out(Nl * C);
    moe_->forward(moe_out.data(), a.n2.data(), a.moe);
    for (std::size_t i = 0; i < Nl * C; ++i) x_out[i] = a.x2[i] + moe_out[i];
    a.complete = true;
    return;
  }
  a.n2_full.resize(N * C);
  tp::enter_column_forward(tp_, a.n2_full.data(), a.n2.data(), Nl * C);
  a.h.resize(N * Fl);
  a.a.resize(N * Fl);
  if (d_.gelu()) {
    fc_.forward(a.h.data(), a.n2_full.data(), N);
    gelu_forward(a.a.data(), a.h.data(), N * Fl);
  } else {
    a.up.resize(N * Fl);
    gate_.forward(a.h.data(), a.n2_full.data(), N);
    fc_.forward(a.up.data(), a.n2_full.data(), N);
    swiglu_forward(a.a.data(), a.h.data(), a.up.data(), N * Fl);
  }
  std::vector<T> mlp_out(Nl * C);
  down_.forward(tp_, mlp_out.data(), a.a.data(), N, Nl);
  for (std::size_t i = 0; i < Nl * C; ++i) x_out[i] = a.x2[i] + mlp_out[i];
  a.complete = true;
}

// The dense MLP's backward: dn2 (Nl, C) from dx_out (Nl, C).
template <typename T>
void TransformerBlock<T>::mlp_backward(T* dn2, const T* dx_out, const BlockActivations<T>& a) const {
  const std::size_t C = d_.hidden, N = d_.rows(), Nl = d_.local_rows();
  const std::size_t Fl = d_.ffn_local();
  std::vector<T> da(N * Fl);
  down_.backward(tp_, da.data(), dx_out, a.a.data(), N, Nl);
  std::vector<T> dn2_full(N * C);
  if (d_.gelu()) {
    std::vector<T> dh(N * Fl);
    gelu_backward(dh.data(), a.h.data(), da.data(), N * Fl);
    fc_.backward(dn2_full.data(), dh.data(), a.n2_full.data(), N, false);
  } else {
    std::vector<T> dgate(N * Fl), dup(N * Fl);
    swiglu_backward(dgate.data(), dup.data(), a.h.data(), a.up.data(), da.data(), N * Fl);
    gate_.backward(dn2_full.data(), dgate.data(), a.n2_full.data(), N, false);
    fc_.backward(dn2_full.data(), dup.data(), a.n2_full.data(), N, true);
  }
  tp::enter_column_backward(tp_, dn2, dn2_full.data(), Nl * C);
}

template <typename T>
void TransformerBlock<T>::backward(T* dx_in, const T* dx_out, BlockActivations<T>& a) const {
  const std::size_t C = d_.hidden, N = d_.rows(), Nl = d_.local_rows();
  const AttentionShape as = attention_shape();
  if (!a.complete) {  // full recompute: rebuild every activation from the block input
    std::vector<T> x_in = std::move(a.x_in), x_out(Nl * C);
    run_forward(x_out.data(), x_in.data(), a, /*keep_probs=*/true);
  }

  // --- MLP ---
  std::vector<T> dx2(dx_out, dx_out + Nl * C);  // residual path
  std::vector<T> dn2(Nl * C);
  if (moe_) {
    moe_->backward(dn2.data(), dx_out, a.n2.data(), a.moe);
  } else {
    mlp_backward(dn2.data(), dx_out, a);
  }
  norm_backward(dx2.data(), dn2_w_, dn2_b_, dn2.data(), a.x2.data(), a.n2_mean.data(),
                a.n2_rstd.data(), n2_w_);

  // --- attention ---
  std::copy(dx2.begin(), dx2.end(), dx_in);  // residual path
  std::vector<T> dy(N * as.q_width());
  proj_.backward(tp_, dy.data(), dx2.data(), a.y.data(), N, Nl);
  std::vector<T> d_o(a.q.size()), dq, dk, dv;
  merge_heads_backward(d_o.data(), dy.data(), as);
  attend_backward(dq, dk, dv, d_o, a);
  const std::size_t* pos = positions_.empty() ? nullptr : positions_.data();
  if (d_.rope()) {
    rope_backward(dq.data(), as.batch * as.heads, as.seq, as.head_dim, pos);
    rope_backward(dk.data(), as.batch * as.kv_heads, as.seq, as.head_dim, pos);
  }
  std::vector<T> dqkv(N * as.qkv_width());
  split_heads_backward(dqkv.data(), dq.data(), dk.data(), dv.data(), as);
  std::vector<T> dn1_full(N * C);
  qkv_.backward(dn1_full.data(), dqkv.data(), a.n1_full.data(), N, false);
  std::vector<T> dn1(Nl * C);
  tp::enter_column_backward(tp_, dn1.data(), dn1_full.data(), Nl * C);
  norm_backward(dx_in, dn1_w_, dn1_b_, dn1.data(), a.x_in.data(), a.n1_mean.data(),
                a.n1_rstd.data(), n1_w_);
  a.release();
}

template class TransformerBlock<float>;
template class TransformerBlock<double>;

}  // namespace strata::runtime
