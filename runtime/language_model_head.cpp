#include "runtime/language_model_head.h"

#include <algorithm>

#include "runtime/matmul.h"
#include "runtime/norm.h"
#include "runtime/vocab_parallel_cross_entropy.h"
#include "runtime/vocab_parallel_embedding.h"

namespace strata::runtime {

template <typename T>
std::vector<ParamSpec> LanguageModelHead<T>::param_specs(const ModelDims& d) {
  std::vector<ParamSpec> out;
  ParamSpec w;
  w.name = "head.norm.weight";
  w.rows = static_cast<std::int64_t>(d.hidden);
  w.init = ParamInit::Ones;
  w.sp_partial_grad = d.sequence_parallel;
  out.push_back(w);
  if (d.layernorm()) {
    ParamSpec b = w;
    b.name = "head.norm.bias";
    b.init = ParamInit::Zeros;
    out.push_back(b);
  }
  ParamSpec lm = word_embedding_spec(d);
  if (!d.tied()) lm.name = "head.lm_head.weight";
  out.push_back(lm);
  return out;
}

template <typename T>
LanguageModelHead<T>::LanguageModelHead(const ModelDims& d, ParameterStore<T>& store,
                                        const TpGroup& tp)
    : d_(d), tp_(tp) {
  nf_w_ = store.param("head.norm.weight");
  dnf_w_ = store.grad("head.norm.weight");
  if (d.layernorm()) {
    nf_b_ = store.param("head.norm.bias");
    dnf_b_ = store.grad("head.norm.bias");
  }
  const char* lm = d.tied() ? "embedding.wte" : "head.lm_head.weight";
  w_ = store.param(lm);
  dw_ = store.grad(lm);
}

template <typename T>
double LanguageModelHead<T>::forward(const T* x, const std::int32_t* targets, T token_weight,
                                     HeadActivations<T>& a) const {
  const std::size_t C = d_.hidden, N = d_.rows(), Nl = d_.local_rows();
  const auto Vl = static_cast<std::size_t>(d_.vocab_local);
  a.x.assign(x, x + Nl * C);
  a.nf.resize(Nl * C);
  a.nf_mean.resize(Nl);
  a.nf_rstd.resize(Nl);
  if (d_.layernorm()) layernorm_forward(a.nf.data(), a.nf_mean.data(), a.nf_rstd.data(), x, nf_w_, nf_b_, Nl, C);
  else rmsnorm_forward(a.nf.data(), a.nf_rstd.data(), x, nf_w_, Nl, C);
  a.nf_full.resize(N * C);
  tp::enter_column_forward(tp_, a.nf_full.data(), a.nf.data(), Nl * C);
  a.probs.resize(N * Vl);  // logits (N, Vl) = nf_full W^T, then probabilities in place
  linear_forward<T>(a.probs.data(), a.nf_full.data(), w_, nullptr, N, C, Vl);
  std::vector<T> losses(N);
  vocab_parallel_cross_entropy_forward(tp_, a.probs.data(), losses.data(), targets, N, Vl,
                                       d_.vocab_begin);
  a.targets.assign(targets, targets + N);
  a.dloss = token_weight;
  double sum = 0;
  for (std::size_t r = 0; r < N; ++r) sum += static_cast<double>(losses[r]);
  return sum * static_cast<double>(token_weight);
}

template <typename T>
void LanguageModelHead<T>::backward(T* dx, HeadActivations<T>& a) const {
  const std::size_t C = d_.hidden, N = d_.rows(), Nl = d_.local_rows();
  const auto Vl = static_cast<std::size_t>(d_.vocab_local);
  std::vector<T> dlogits(N * Vl);
  vocab_parallel_cross_entropy_backward(dlogits.data(), a.probs.data(), a.targets.data(), a.dloss,
                                        N, Vl, d_.vocab_begin);
  std::vector<T> dnf_full(N * C);
  linear_backward<T>(dnf_full.data(), dw_, nullptr, dlogits.data(), a.nf_full.data(), w_, N, C, Vl);
  std::vector<T> dnf(Nl * C);
  tp::enter_column_backward(tp_, dnf.data(), dnf_full.data(), Nl * C);
  std::fill_n(dx, Nl * C, T(0));
  if (d_.layernorm())
    layernorm_backward(dx, dnf_w_, dnf_b_, dnf.data(), a.x.data(), a.nf_mean.data(), a.nf_rstd.data(), nf_w_, Nl, C);
  else
    rmsnorm_backward(dx, dnf_w_, dnf.data(), a.x.data(), a.nf_rstd.data(), nf_w_, Nl, C);
  a.release();
}

template class LanguageModelHead<float>;
template class LanguageModelHead<double>;

}  // namespace strata::runtime
