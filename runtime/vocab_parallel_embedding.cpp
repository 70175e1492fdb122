#include "runtime/vocab_parallel_embedding.h"

#include <algorithm>

namespace strata::runtime {

ParamSpec word_embedding_spec(const ModelDims& d) {
  ParamSpec s;
  s.name = "embedding.wte";
  s.rows = static_cast<std::int64_t>(d.vocab);
  s.cols = static_cast<std::int64_t>(d.hidden);
  s.row_ranges = {{d.vocab_begin, d.vocab_local}};
  s.weight_decay = true;
  s.tp_sharded = true;
  return s;
}

template <typename T>
std::vector<ParamSpec> VocabParallelEmbedding<T>::param_specs(const ModelDims& d) {
  std::vector<ParamSpec> out{word_embedding_spec(d)};
  if (d.learned_positions()) {
    ParamSpec p;
    p.name = "embedding.wpe";
    p.rows = static_cast<std::int64_t>(d.full_seq);
    p.cols = static_cast<std::int64_t>(d.hidden);
    p.init_std = 0.01;
    p.weight_decay = true;
    p.sp_partial_grad = d.sequence_parallel;
    out.push_back(p);
  }
  return out;
}

template <typename T>
VocabParallelEmbedding<T>::VocabParallelEmbedding(const ModelDims& d, ParameterStore<T>& store,
                                                  const TpGroup& tp)
    : d_(d), tp_(tp), wte_(store.param("embedding.wte")), dwte_(store.grad("embedding.wte")) {
  if (d.learned_positions()) {
    wpe_ = store.param("embedding.wpe");
    dwpe_ = store.grad("embedding.wpe");
  }
}

template <typename T>
void VocabParallelEmbedding<T>::forward(T* x, const std::int32_t* tokens) const {
  const std::size_t C = d_.hidden, N = d_.rows(), Nl = d_.local_rows();
  std::vector<T> partial(N * C, T(0));  // (N, C): rows of tokens in this rank's vocabulary
  for (std::size_t r = 0; r < N; ++r) {
    const std::int64_t row = tokens[r] - d_.vocab_begin;
    if (row >= 0 && row < d_.vocab_local)
      std::copy_n(wte_ + static_cast<std::size_t>(row) * C, C, partial.data() + r * C);
  }
  tp::exit_row_forward(tp_, x, partial.data(), Nl * C);
  if (wpe_ != nullptr) {
    const std::size_t first = d_.sequence_parallel ? static_cast<std::size_t>(d_.tp_rank) * Nl : 0;
    for (std::size_t r = 0; r < Nl; ++r) {
      const std::size_t pos = d_.position((first + r) % d_.seq);
      for (std::size_t c = 0; c < C; ++c) x[r * C + c] += wpe_[pos * C + c];
    }
  }
}

template <typename T>
void VocabParallelEmbedding<T>::backward(const T* dx, const std::int32_t* tokens) const {
  const std::size_t C = d_.hidden, N = d_.rows(), Nl = d_.local_rows();
  if (dwpe_ != nullptr) {
    const std::size_t first = d_.sequence_parallel ? static_cast<std::size_t>(d_.tp_rank) * Nl : 0;
    for (std::size_t r = 0; r < Nl; ++r) {
      const std::size_t pos = d_.position((first + r) % d_.seq);
      for (std::size_t c = 0; c < C; ++c) dwpe_[pos * C + c] += dx[r * C + c];
    }
  }
  std::vector<T> dfull(N * C);
  tp::exit_row_backward(tp_, dfull.data(), dx, Nl * C);
  for (std::size_t r = 0; r < N; ++r) {
    const std::int64_t row = tokens[r] - d_.vocab_begin;
    if (row < 0 || row >= d_.vocab_local) continue;
    T* g = dwte_ + static_cast<std::size_t>(row) * C;
    for (std::size_t c = 0; c < C; ++c) g[c] += dfull[r * C + c];
  }
}

template class VocabParallelEmbedding<float>;
template class VocabParallelEmbedding<double>;

}  // namespace strata::runtime
