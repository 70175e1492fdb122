// MlaSpec: multi-head latent attention (DeepSeek-V2/V3). Queries go through an
// optional low-rank bottleneck (q_lora_rank; 0 = a plain h -> heads*(nope+rope)
// projection); keys and values are compressed to kv_lora_rank plus one shared rotary key
// of qk_rope_head_dim, then expanded per head to qk_nope_head_dim (K) and v_head_dim (V).
// The compressed latents carry their own RMSNorm (q_lora_rank and kv_lora_rank weights).
#pragma once
#include <cstdint>

namespace strata::models {

struct MlaSpec {
  std::int64_t q_lora_rank = 0;       // 0 = no query compression
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;  // per-head key/query part without positions
  std::int64_t qk_rope_head_dim = 0;  // per-head rotary part (the key's is shared by all heads)
  std::int64_t v_head_dim = 0;
  std::int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  bool operator==(const MlaSpec&) const = default;
};

}  // namespace strata::models
