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
    : d_(d), layout_(layout) {
  if (layout.embedding) {
    embedding_.emplace(d, store, tp);
    embedding_specs_ = VocabParallelEmbedding<T>::param_specs(d);
  }
  for (int b : layout.blocks) {
    blocks_.emplace_back(d, b, store, tp, cp, experts, ep);
    block_specs_.push_back(TransformerBlock<T>::param_specs(d, b));
  }
  if (layout.head) {
    head_.emplace(d, store, tp);
    head_specs_ = LanguageModelHead<T>::param_specs(d);
  }
}

template <typename T>
double ModelChunk<T>::forward(ChunkActivations<T>& acts, const std::int32_t* tokens,
                              const std::int32_t* targets, const T* x_in, T* x_out,
                              T token_weight) const {
  const std::size_t n = activation_size();
  std::vector<T> x(n), next(n);
  if (embedding_) {
    acts.tokens.assign(tokens, tokens + d_.rows());
    gather(embedding_specs_);
    embedding_->forward(x.data(), tokens);
    release(embedding_specs_);
  } else {
    std::copy_n(x_in, n, x.data());
  }
  acts.blocks.resize(blocks_.size());
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    gather(block_specs_[i]);
    blocks_[i].forward(next.data(), x.data(), acts.blocks[i]);
    release(block_specs_[i]);
    std::swap(x, next);
  }
  if (head_) {
    gather(head_specs_);
    const double loss = head_->forward(x.data(), targets, token_weight, acts.head);
    release(head_specs_);
    return loss;
  }
  std::copy(x.begin(), x.end(), x_out);
  return 0.0;
}

template <typename T>
void ModelChunk<T>::backward(ChunkActivations<T>& acts, const T* dx_out, T* dx_in,
                             const ParamsDoneFn& done) const {
  const std::size_t n = activation_size();
  std::vector<T> dx(n), prev(n);
  if (head_) {
    gather(head_specs_);
    head_->backward(dx.data(), acts.head);
    release(head_specs_);
    if (done) done(head_specs_);
  } else {
    std::copy_n(dx_out, n, dx.data());
  }
  for (std::size_t i = blocks_.size(); i-- > 0;) {
    gather(block_specs_[i]);
    blocks_[i].backward(prev.data(), dx.data(), acts.blocks[i]);
    release(block_specs_[i]);
    std::swap(dx, prev);
    if (done) done(block_specs_[i]);
  }
  if (embedding_) {
    gather(embedding_specs_);
    embedding_->backward(dx.data(), acts.tokens.data());
    release(embedding_specs_);
    if (done) done(embedding_specs_);
  } else {
    std::copy(dx.begin(), dx.end(), dx_in);
  }
  acts = ChunkActivations<T>{};
}

template class ModelChunk<float>;
template class ModelChunk<double>;

}  // namespace strata::runtime
