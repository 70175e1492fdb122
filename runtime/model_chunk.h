// ModelChunk: the layers of one virtual pipeline stage (a plan's stage_layers[v]):
// optionally the embedding (layer group 0), a run of transformer blocks (groups 1..L),
// optionally the final norm + LM head + loss (group L+1). One forward/backward per
// micro-batch; the pipeline executor moves activations (Nl, C) between chunks.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/language_model_head.h"
#include "runtime/model_dims.h"
#include "runtime/param_residency.h"
#include "runtime/parameter_store.h"
#include "runtime/transformer_block.h"
#include "runtime/vocab_parallel_embedding.h"

namespace strata::runtime {

struct ChunkLayout {
  bool embedding = false;
  std::vector<int> blocks;  // 0-based block indices (= plan layer group - 1)
  bool head = false;
};

// From a plan's layer groups (0 = embedding, 1..L blocks, L+1 head); InputError on a
// group outside 0..L+1.
ChunkLayout chunk_layout(const std::vector<int>& layer_groups, int layers);

template <typename T>
struct ChunkActivations {
  std::vector<std::int32_t> tokens;           // embedding input (B*S)
  std::vector<BlockActivations<T>> blocks;
  HeadActivations<T> head;
};

// Told, during a backward pass, the parameters of a component (the embedding, one block,
// the head) whose backward just ran: the gradients it accumulates into are complete for
// that micro-batch. Each component's param_specs(), in backward order (head, blocks last
// to first, embedding); the tied embedding is named by both the head and the embedding.
using ParamsDoneFn = std::function<void(const std::vector<ParamSpec>&)>;

template <typename T>
class ModelChunk {
 public:
  static std::vector<ParamSpec> param_specs(const ModelDims& d, const ChunkLayout& layout);
  // MoE blocks take their routed experts from `experts` (default: `store`) and exchange
  // tokens over `ep`.
  ModelChunk(const ModelDims& d, const ChunkLayout& layout, ParameterStore<T>& store,
             const TpGroup& tp, const CpGroup& cp = {}, ParameterStore<T>* experts = nullptr,
             const EpGroup& ep = {});

  // Forward of one micro-batch. Input: `tokens` (B*S) when the chunk has the embedding,
  // else x_in (Nl, C). Output: the loss contribution (sum of token losses * token_weight)
  // when it has the head, else x_out (Nl, C) and 0.
  double forward(ChunkActivations<T>& acts, const std::int32_t* tokens,
                 const std::int32_t* targets, const T* x_in, T* x_out, T token_weight) const;
  // Backward: dx_out (Nl, C) unless the chunk has the head; writes dx_in (Nl, C) unless it
  // has the embedding. Accumulates parameter gradients and releases `acts`. `done`, when
  // given, hears of each component as its backward finishes.
  void backward(ChunkActivations<T>& acts, const T* dx_out, T* dx_in,
                const ParamsDoneFn& done = {}) const;

  // Sharded parameters or gradients (ZeRO-2/3): each component is made resident around its
  // forward and backward (and rebuilt then: the layers keep raw pointers into the store).
  // `dense` holds the parameters of the store, `experts` the routed experts (their own
  // store, sharded over the expert data-parallel group); dense first, then experts, on
  // every rank alike. Null: always resident.
  void set_residency(ParamResidency* dense, ParamResidency* experts = nullptr);
  const ChunkLayout& layout() const { return layout_; }
  std::size_t activation_size() const { return d_.local_rows() * d_.hidden; }  // Nl * C

 private:
  // Component k in forward order: the embedding (if held), the blocks, the head (if held).
  std::size_t components() const { return specs_.size(); }
  // Runs compute(k) for the components in `order`, each resident while it runs (prefetching
  // the next one's parameters when the residency says so).
  template <typename Fn>
  void run_resident(const std::vector<std::size_t>& order, bool backward, const ParamsDoneFn& done,
                    Fn&& compute) const;
  void build(std::size_t k) const;  // (re)binds component k's layer to the store

  ModelDims d_;
  ChunkLayout layout_;
  ParameterStore<T>& store_;
  TpGroup tp_;
  CpGroup cp_;
  ParameterStore<T>* experts_;  // routed experts (MoE blocks); null: in store_
  EpGroup ep_;
  // The layer objects only hold pointers into the store; rebuilt when it moves them.
  mutable std::optional<VocabParallelEmbedding<T>> embedding_;
  mutable std::vector<std::optional<TransformerBlock<T>>> blocks_;
  mutable std::optional<LanguageModelHead<T>> head_;
  std::vector<std::vector<ParamSpec>> specs_;  // per component
  // A residency and, per component, the specs of the store it keeps.
  struct Resident {
    ParamResidency* residency;
    std::vector<std::vector<ParamSpec>> specs;
  };
  std::vector<Resident> residents_;
};

}  // namespace strata::runtime
