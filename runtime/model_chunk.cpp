#include "runtime/model_chunk.h"

#include <algorithm>

#include "common/errors.h"

namespace strata::runtime {

ChunkLayout chunk_layout(const std::vector<int>& layer_groups, int layers) {
  ChunkLayout c;
  for (int g : layer_groups) {
    if (g < 0 || g > layers + 1)
      input_error("stage_layers: layer group {} is outside 0..{} (0 = embedding, 1..{} blocks, "
                  "{} = head)", g, layers + 1, layers, layers + 1);
    if (g == 0) c.embedding = true;
    else if (g == layers + 1) c.head = true;
    else c.blocks.push_back(g - 1);
  }
  return c;
}

template <typename T>
std::vector<ParamSpec> ModelChunk<T>::param_specs(const ModelDims& d, const ChunkLayout& layout) {
  std::vector<ParamSpec> out;
  auto append = [&](std::vector<ParamSpec> v) { out.insert(out.end(), v.begin(), v.end()); };
  if (layout.embedding) append(VocabParallelEmbedding<T>::param_specs(d));
  for (int b : layout.blocks) append(TransformerBlock<T>::param_specs(d, b));
  if (layout.head) append(LanguageModelHead<T>::param_specs(d));
  return out;
}

template <typename T>
ModelChunk<T>::ModelChunk(const ModelDims& d, const ChunkLayout& layout, ParameterStore<T>& store,
                          const TpGroup& tp, const CpGroup& cp, ParameterStore<T>* experts,
                          const EpGroup& ep)
    : d_(d), layout_(layout), store_(store), tp_(tp), cp_(cp), experts_(experts), ep_(ep) {
  if (layout.embedding) specs_.push_back(VocabParallelEmbedding<T>::param_specs(d));
  for (int b : layout.blocks) specs_.push_back(TransformerBlock<T>::param_specs(d, b));
  if (layout.head) specs_.push_back(LanguageModelHead<T>::param_specs(d));
  blocks_.resize(layout.blocks.size());
  for (std::size_t k = 0; k < components(); ++k) build(k);
}

template <typename T>
void ModelChunk<T>::build(std::size_t k) const {
  const std::size_t first_block = layout_.embedding ? 1 : 0;
  if (layout_.embedding && k == 0) {
    embedding_.emplace(d_, store_, tp_);
  } else if (k - first_block < blocks_.size()) {
    blocks_[k - first_block].emplace(d_, layout_.blocks[k - first_block], store_, tp_, cp_, experts_,
                                     ep_);
  } else {
    head_.emplace(d_, store_, tp_);
  }
}

template <typename T>
void ModelChunk<T>::set_residency(ParamResidency* dense, ParamResidency* experts) {
  residents_.clear();
  for (ParamResidency* r : {dense, experts}) {
    if (r == nullptr) continue;
    Resident x{r, {}};
    for (const auto& component : specs_) {
      x.specs.emplace_back();
      for (const ParamSpec& spec : component)
        if (spec.expert == (r == experts)) x.specs.back().push_back(spec);
    }
    residents_.push_back(std::move(x));
  }
}

template <typename T>
template <typename Fn>
void ModelChunk<T>::run_resident(const std::vector<std::size_t>& order, bool backward,
                                 const ParamsDoneFn& done, Fn&& compute) const {
  // Each residency on the component's specs it keeps; a component with none of them (a
  // dense block for the experts' residency) issues nothing there, alike on every rank.
  auto each = [&](std::size_t k, auto&& fn) {
    for (const Resident& x : residents_)
      if (!x.specs[k].empty()) fn(*x.residency, x.specs[k]);
  };
  if (!order.empty())
    each(order.front(), [](ParamResidency& r, const auto& c) { if (r.prefetch()) r.fetch_params(c); });
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::size_t k = order[i];
    if (!residents_.empty()) {
      each(k, [](ParamResidency& r, const auto& c) { if (!r.prefetch()) r.fetch_params(c); });
      each(k, [](ParamResidency& r, const auto& c) { r.wait_params(c); });
      // the next component's all-gather runs while this one computes
      if (i + 1 < order.size())
        each(order[i + 1], [](ParamResidency& r, const auto& c) { if (r.prefetch()) r.fetch_params(c); });
      if (backward) each(k, [](ParamResidency& r, const auto& c) { r.acquire_grads(c); });
      build(k);
    }
    compute(k);
    each(k, [&](ParamResidency& r, const auto& c) {
      r.release_params(c);
      if (backward) r.release_grads(c);
    });
    if (done) done(specs_[k]);
  }
}

template <typename T>
double ModelChunk<T>::forward(ChunkActivations<T>& acts, const std::int32_t* tokens,
                              const std::int32_t* targets, const T* x_in, T* x_out,
                              T token_weight) const {
  const std::size_t n = activation_size();
  const std::size_t first_block = layout_.embedding ? 1 : 0;
  std::vector<T> x(n), next(n);
  if (embedding_) acts.tokens.assign(tokens, tokens + d_.rows());
  else std::copy_n(x_in, n, x.data());
  acts.blocks.resize(blocks_.size());
  double loss = 0.0;
  std::vector<std::size_t> order(components());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  run_resident(order, false, {}, [&](std::size_t k) {
    if (layout_.embedding && k == 0) {
      embedding_->forward(x.data(), tokens);
    } else if (k - first_block < blocks_.size()) {
      const std::size_t i = k - first_block;
      blocks_[i]->forward(next.data(), x.data(), acts.blocks[i]);
      std::swap(x, next);
    } else {
      loss = head_->forward(x.data(), targets, token_weight, acts.head);
    }
  });
  if (!head_) std::copy(x.begin(), x.end(), x_out);
  return loss;
}

template <typename T>
void ModelChunk<T>::backward(ChunkActivations<T>& acts, const T* dx_out, T* dx_in,
                             const ParamsDoneFn& done) const {
  const std::size_t n = activation_size();
  const std::size_t first_block = layout_.embedding ? 1 : 0;
  std::vector<T> dx(n), prev(n);
  if (!head_) std::copy_n(dx_out, n, dx.data());
  std::vector<std::size_t> order(components());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = order.size() - 1 - k;
  run_resident(order, true, done, [&](std::size_t k) {
    if (layout_.embedding && k == 0) {
      embedding_->backward(dx.data(), acts.tokens.data());
    } else if (k - first_block < blocks_.size()) {
      const std::size_t i = k - first_block;
      blocks_[i]->backward(prev.data(), dx.data(), acts.blocks[i]);
      std::swap(dx, prev);
    } else {
      head_->backward(dx.data(), acts.head);
    }
  });
  if (!embedding_) std::copy(dx.begin(), dx.end(), dx_in);
  acts = ChunkActivations<T>{};
}

template class ModelChunk<float>;
template class ModelChunk<double>;

}  // namespace strata::runtime
