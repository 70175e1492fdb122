// ParamSpec: one named parameter tensor, its full (unsharded) shape, which part of it
// this rank holds, and how it is initialized. Initialization is layout independent:
// the FULL tensor is generated from (seed, name) and the local shard sliced out of it,
// so every parallel layout starts from the same weights.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::runtime {

enum class ParamInit { Normal, Zeros, Ones };

struct ParamSpec {
  std::string name;            // "blocks.3.attn.qkv.weight"
  std::int64_t rows = 1;       // full tensor (rows, cols); vectors are (n, 1)
  std::int64_t cols = 1;
  // Local shard: the rows of these [begin, begin + count) ranges, concatenated in order,
  // and within each row the columns [col_begin, col_begin + col_count). Empty ranges =
  // all rows; col_count < 0 = all columns.
  std::vector<std::pair<std::int64_t, std::int64_t>> row_ranges;
  std::int64_t col_begin = 0;
  std::int64_t col_count = -1;
  ParamInit init = ParamInit::Normal;
  double init_std = 0.02;
  bool weight_decay = false;   // AdamW decoupled decay (matrices and embeddings)
  bool tp_sharded = false;     // each TP rank holds a different part
  bool sp_partial_grad = false;  // replicated over TP, but with sequence parallelism each
                                 // rank's gradient covers only its tokens: all-reduce over TP
  bool expert = false;         // a routed expert's weight: held by one expert-parallel rank,
                               // its gradient summed over the expert data-parallel group

  std::int64_t local_rows() const;
  std::int64_t local_cols() const { return col_count < 0 ? cols : col_count; }
  std::int64_t local_numel() const { return local_rows() * local_cols(); }
};

// Fills `out` (local_numel values) with this rank's slice of the full tensor that
// (seed, spec.name) generates. Normal values come from a counter-based generator
// (SplitMix64 + Box-Muller, computed in double) that does not depend on the library.
template <typename T>
void init_param(const ParamSpec& spec, std::uint64_t seed, T* out);

// 64-bit FNV-1a hash (also the checkpoint checksum).
std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t h = 0xcbf29ce484222325ull);

}  // namespace strata::runtime
