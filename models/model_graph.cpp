#include "models/model_graph.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <boost/graph/topological_sort.hpp>
#include <fmt/format.h>

#include "common/checked_math.h"
#include "common/errors.h"

namespace strata::models {
namespace {

using Vertex = OpGraph::vertex_descriptor;

// Builds the graph op by op; every op's numbers are written out here from the
// shapes (b sequences of s tokens, unsharded), see model_graph.h for the terms.
class Builder {
 public:
  Builder(const ModelSpec& m, std::int64_t micro_batch, OpGraph& g) : m_(m), g_(g) {
    b_ = static_cast<double>(micro_batch);
    s_ = static_cast<double>(m.seq_len);
    h_ = static_cast<double>(m.hidden);
    a_ = static_cast<double>(m.heads);
    kv_ = static_cast<double>(m.kv_dim());
    f_ = static_cast<double>(m.ffn);
    q_ = static_cast<double>(m.q_dim());
    k_ = m.moe ? static_cast<double>(m.moe->top_k) : 0.0;
    V_ = static_cast<double>(m.vocab);
    t_ = b_ * s_;
    tokens_ = checked_mul(micro_batch, m.seq_len, "micro_batch * seq_len");
    bias_ = has_bias(m) ? 1.0 : 0.0;
  }

  Vertex embedding() {
    Op op = base("embedding", OpKind::Embedding, 0, Sharding::VocabParallel);
    const bool learned = m_.positions == Positions::Learned;
    op.params = V_ * h_ + (learned ? s_ * h_ : 0.0);
    // Gather token rows (+ position rows), write the sum.
    op.bytes_fwd = 2 * t_ * h_ * (learned ? 3 : 2);
    op.bytes_bwd = 2 * op.bytes_fwd;
    op.activation_bytes = t_ * h_;  // embedding dropout mask
    op.tp_comm = TpComm::VocabAllReduce;
    op.tp_comm_bytes = 2 * t_ * h_;
    return add(std::move(op));
  }

  // One transformer block in layer group `layer`, its op names prefixed by `p`, with the
  // mixture-of-experts MLP when `moe`; `x` is the residual stream entering it. Returns
  // its output.
  Vertex block(int layer, const std::string& p, bool moe, Vertex x) {
    Vertex n1 = norm(p + "norm1", layer);
    edge(x, n1);

    Vertex va = m_.mla ? mla_attention(p, layer, n1) : attention(p, layer, n1);

    const double q_out = m_.mla ? static_cast<double>(m_.heads * m_.mla->v_head_dim) : q_;
    Op out = gemm(p + "out_proj", OpKind::OutProj, layer, Sharding::RowParallel,
                  static_cast<std::int64_t>(q_out), m_.hidden);
    out.params += bias_ * h_;
    out.activation_bytes = 2 * t_ * q_out;
    out.tp_comm = TpComm::AllReduceForwardCopyBackward;
    out.tp_comm_bytes = 2 * t_ * h_;
    Vertex vo = add(std::move(out));
    edge(va, vo);

    Vertex r1 = residual(p + "residual1", layer);
    edge(vo, r1);
    edge(x, r1);

    Vertex n2 = norm(p + "norm2", layer);
    edge(r1, n2);

    Vertex vd = moe ? moe_mlp(p, layer, n2) : dense_mlp(p, layer, n2);

    Vertex r2 = residual(p + "residual2", layer);
    edge(vd, r2);
    edge(r1, r2);
    return r2;
  }

  // Q/K/V projection, rope and the attention core (MHA / GQA); returns the core.
  Vertex attention(const std::string& p, int layer, Vertex n1) {
    Op qkv = gemm(p + "qkv", OpKind::Qkv, layer, Sharding::ColumnParallel,
                  static_cast<std::int64_t>(h_), m_.q_dim() + 2 * m_.kv_dim());
    qkv.params += bias_ * (q_ + 2 * kv_);
    qkv.activation_bytes = 2 * t_ * h_;
    qkv.tp_comm = TpComm::CopyForwardAllReduceBackward;
    qkv.tp_comm_bytes = 2 * t_ * h_;
    Vertex vqkv = add(std::move(qkv));
    edge(n1, vqkv);

    Vertex before_attn = vqkv;
    if (m_.qk_norm) {
      // Qwen3's q_norm / k_norm (Megatron-LM's q_layernorm / k_layernorm): the model's norm
      // over each head of Q and of K, its head_dim weights shared by the heads. Sharded with
      // the heads; the 2 x head_dim weights are counted with them (a few hundred per block).
      const double d = static_cast<double>(m_.head_dim());
      Vertex vqn = head_norm(p + "q_head_norm", layer, q_, d);
      Vertex vkn = head_norm(p + "k_head_norm", layer, kv_, d);
      edge(vqkv, vqn);
      edge(vqkv, vkn);
      edge(vqn, vkn);  // one path on to RoPE: Q's norm, then K's
      before_attn = vkn;
    }
    if (m_.positions == Positions::Rope) {
      Op rope = base(p + "rope", OpKind::Rope, layer, Sharding::HeadParallel);
      rope.bytes_fwd = 2 * (2 * t_ * (q_ + kv_));  // read and write Q and K
      rope.bytes_bwd = 2 * rope.bytes_fwd;
      Vertex vr = add(std::move(rope));
      edge(before_attn, vr);
      before_attn = vr;
    }

    Op attn = base(p + "attention_core", OpKind::AttentionCore, layer, Sharding::HeadParallel);
    attn.attention = {static_cast<std::int64_t>(b_), m_.heads, m_.kv_heads, m_.seq_len,
                      m_.head_dim()};
    attn.flops_fwd = 4 * b_ * s_ * s_ * q_;  // QK^T and AV, causal halving left to the cost model
    attn.flops_bwd = 2 * attn.flops_fwd;
    attn.bytes_fwd = 2 * t_ * (q_ + 2 * kv_) + 2 * t_ * q_;  // read Q, K, V; write O
    attn.bytes_bwd = 2 * attn.bytes_fwd;
    attn.selective_recompute_bytes = 5 * a_ * s_ * s_ * b_;
    attn.activation_bytes = 2 * t_ * q_ + 4 * t_ * kv_ + attn.selective_recompute_bytes;
    Vertex va = add(std::move(attn));
    edge(before_attn, va);
    return va;
  }

  // Multi-head latent attention (DeepSeek-V2/V3): replicated down-projections to the
  // latents (Megatron-Core builds them "duplicated" across TP), RMSNorm on each latent,
  // column-parallel up-projections to per-head Q and K/V; returns the attention core.
  Vertex mla_attention(const std::string& p, int layer, Vertex n1) {
    const MlaSpec& a = *m_.mla;
    const auto H = static_cast<std::int64_t>(h_);
    const double heads = a_, qk = static_cast<double>(a.qk_head_dim());
    const double v = static_cast<double>(a.v_head_dim);
    Vertex q_in = n1;
    std::int64_t q_in_width = H;
    if (a.q_lora_rank > 0) {
      Op qd = gemm(p + "q_down", OpKind::Qkv, layer, Sharding::Replicated, H, a.q_lora_rank);
      qd.activation_bytes = 2 * t_ * h_;  // the block's attention input
      Vertex vqd = add(std::move(qd));
      edge(n1, vqd);
      Vertex vqn = latent_norm(p + "q_norm", layer, a.q_lora_rank, a.q_lora_rank);
      edge(vqd, vqn);
      q_in = vqn;
      q_in_width = a.q_lora_rank;
    }
    Op qu = gemm(p + (a.q_lora_rank > 0 ? "q_up" : "q_proj"), OpKind::Qkv, layer,
                 Sharding::ColumnParallel, q_in_width, m_.heads * a.qk_head_dim());
    if (a.q_lora_rank == 0) qu.activation_bytes = 2 * t_ * h_;
    qu.tp_comm = TpComm::CopyForwardAllReduceBackward;
    qu.tp_comm_bytes = 2 * t_ * static_cast<double>(q_in_width);
    Vertex vqu = add(std::move(qu));
    edge(q_in, vqu);

    Op kvd = gemm(p + "kv_down", OpKind::Qkv, layer, Sharding::Replicated, H,
                  a.kv_lora_rank + a.qk_rope_head_dim);
    Vertex vkvd = add(std::move(kvd));
    edge(n1, vkvd);
    Vertex vkvn = latent_norm(p + "kv_norm", layer, a.kv_lora_rank, a.kv_lora_rank + a.qk_rope_head_dim);
    edge(vkvd, vkvn);
    Op kvu = gemm(p + "kv_up", OpKind::Qkv, layer, Sharding::ColumnParallel, a.kv_lora_rank,
                  m_.heads * (a.qk_nope_head_dim + a.v_head_dim));
    kvu.tp_comm = TpComm::CopyForwardAllReduceBackward;
    kvu.tp_comm_bytes = 2 * t_ * static_cast<double>(a.kv_lora_rank);
    Vertex vkvu = add(std::move(kvu));
    edge(vkvn, vkvu);

    Op rope = base(p + "rope", OpKind::Rope, layer, Sharding::HeadParallel);
    const double rope_w = heads * static_cast<double>(a.qk_rope_head_dim) + static_cast<double>(a.qk_rope_head_dim);
    rope.bytes_fwd = 2 * (2 * t_ * rope_w);  // read and write the rotary parts of Q and K
    rope.bytes_bwd = 2 * rope.bytes_fwd;
    Vertex vr = add(std::move(rope));
    edge(vqu, vr);
    edge(vkvu, vr);

    Op attn = base(p + "attention_core", OpKind::AttentionCore, layer, Sharding::HeadParallel);
    attn.attention = {static_cast<std::int64_t>(b_), m_.heads, m_.heads, m_.seq_len, a.qk_head_dim()};
    attn.flops_fwd = 2 * b_ * s_ * s_ * heads * (qk + v);  // QK^T at qk width, AV at v width
    attn.flops_bwd = 2 * attn.flops_fwd;
    attn.bytes_fwd = 2 * t_ * heads * (2 * qk + v) + 2 * t_ * heads * v;  // read Q, K, V; write O
    attn.bytes_bwd = 2 * attn.bytes_fwd;
    attn.selective_recompute_bytes = 5 * a_ * s_ * s_ * b_;
    attn.activation_bytes = 2 * t_ * heads * (2 * qk + v) + attn.selective_recompute_bytes;
    Vertex va = add(std::move(attn));
    edge(vr, va);
    return va;
  }

  // The model's norm over each head of a tensor `width` wide (Q or K), head_dim weights.
  Vertex head_norm(std::string name, int layer, double width, double head_dim) {
    Op op = base(std::move(name), OpKind::Norm, layer, Sharding::HeadParallel);
    op.params = m_.norm == Norm::LayerNorm ? 2 * head_dim : head_dim;
    op.bytes_fwd = 4 * t_ * width;  // read and write, 2 bytes each
    op.bytes_bwd = 2 * op.bytes_fwd;
    op.activation_bytes = 2 * t_ * width;  // its input, saved for the backward
    return add(std::move(op));
  }

  // RMSNorm over a latent of `width` (params) whose saved input is `saved_width` wide.
  Vertex latent_norm(std::string name, int layer, std::int64_t width, std::int64_t saved_width) {
    Op op = base(std::move(name), OpKind::Norm, layer, Sharding::Replicated);
    const double w = static_cast<double>(width);
    op.params = w;
    op.bytes_fwd = 4 * t_ * w;
    op.bytes_bwd = 2 * op.bytes_fwd;
    op.activation_bytes = 2 * t_ * static_cast<double>(saved_width);
    return add(std::move(op));
  }

  // Dense MLP after norm2; returns mlp_down.
  Vertex dense_mlp(const std::string& p, int layer, Vertex n2) {
    Op up = gemm(p + "mlp_up", OpKind::MlpUp, layer, Sharding::ColumnParallel,
                 static_cast<std::int64_t>(h_), m_.ffn);
    up.params += bias_ * f_;
    up.activation_bytes = 2 * t_ * h_;
    up.tp_comm = TpComm::CopyForwardAllReduceBackward;
    up.tp_comm_bytes = 2 * t_ * h_;
    return mlp_rest(p, "mlp_", layer, n2, add(std::move(up)), f_, 1, false);
  }

  // Gate (SwiGLU), activation and down projection after the up projection `vu` of
  // `count` MLPs of width f each. Returns the down projection.
  Vertex mlp_rest(const std::string& p, const std::string& prefix, int layer, Vertex in, Vertex vu,
                  double f, std::int64_t count, bool routed) {
    const double n = static_cast<double>(count);
    edge(in, vu);
    const bool swiglu = m_.activation == Activation::SwiGlu;
    const double tokens = routed ? t_ * k_ : t_;  // token rows through these MLPs
    const double active = routed ? k_ / n : 1.0;
    Vertex vg = vu;
    if (swiglu) {
      Op gate = routed ? expert_gemm(p + prefix + "gate", OpKind::ExpertGate, layer, Sharding::ColumnParallel,
                                     static_cast<std::int64_t>(h_), static_cast<std::int64_t>(f))
                       : gemm(p + prefix + "gate", OpKind::MlpGate, layer, Sharding::ColumnParallel,
                              static_cast<std::int64_t>(h_), static_cast<std::int64_t>(f), count);
      gate.params += n * bias_ * f;
      gate.active_params = gate.params * active;
      vg = add(std::move(gate));
      edge(in, vg);
    }
    Op act = base(p + prefix + "activation", OpKind::Activation, layer, Sharding::ColumnParallel);
    act.bytes_fwd = (swiglu ? 6 : 4) * tokens * f * (routed ? 1.0 : n);  // read gate (+ up), write the product
    act.bytes_bwd = 2 * act.bytes_fwd;
    act.activation_bytes = (swiglu ? 4 : 2) * tokens * f * (routed ? 1.0 : n);
    Vertex vact = add(std::move(act));
    edge(vu, vact);
    if (swiglu) edge(vg, vact);

    Op down = routed ? expert_gemm(p + prefix + "down", OpKind::ExpertDown, layer, Sharding::RowParallel,
                                   static_cast<std::int64_t>(f), m_.hidden)
                     : gemm(p + prefix + "down", OpKind::MlpDown, layer, Sharding::RowParallel,
                            static_cast<std::int64_t>(f), m_.hidden, count);
    down.params += n * bias_ * h_;
    down.active_params = down.params * active;
    down.activation_bytes = 2 * tokens * f * (routed ? 1.0 : n);
    down.tp_comm = TpComm::AllReduceForwardCopyBackward;
    down.tp_comm_bytes = 2 * t_ * h_;
    if (routed) {
      // Expert outputs kept for the gradient of their routing weights (the combine).
      down.activation_bytes += 2 * t_ * k_ * h_;
      down.tp_comm = TpComm::None;  // the combine below returns the tokens; see ep_comm
      down.tp_comm_bytes = 0;
      down.ep_comm = EpComm::CombineForwardDispatchBackward;
      down.ep_comm_bytes = 2 * t_ * k_ * h_;
    }
    Vertex vd = add(std::move(down));
    edge(vact, vd);
    return vd;
  }

  // Mixture-of-experts MLP after norm2: router, routed experts (grouped GEMMs, tokens
  // dispatched before and combined after), shared experts on every token. Returns the
  // op whose output is the MLP's (the routed down projection, after the shared one).
  Vertex moe_mlp(const std::string& p, int layer, Vertex n2) {
    const MoeSpec& e = *m_.moe;
    Op router = gemm(p + "router", OpKind::Router, layer, Sharding::Replicated,
                     static_cast<std::int64_t>(h_), e.experts);
    router.activation_bytes = 2 * t_ * h_ + 4 * t_ * static_cast<double>(e.experts);  // input, fp32 probs
    Vertex vrt = add(std::move(router));
    edge(n2, vrt);

    Vertex last = vrt;
    if (e.shared_experts > 0) {
      Op up = gemm(p + "shared_up", OpKind::MlpUp, layer, Sharding::ColumnParallel,
                   static_cast<std::int64_t>(h_), e.shared_expert_ffn, e.shared_experts);
      up.params += static_cast<double>(e.shared_experts) * bias_ * static_cast<double>(e.shared_expert_ffn);
      up.tp_comm = TpComm::CopyForwardAllReduceBackward;
      up.tp_comm_bytes = 2 * t_ * h_;
      Vertex vu = add(std::move(up));
      last = mlp_rest(p, "shared_", layer, n2, vu, static_cast<double>(e.shared_expert_ffn),
                      e.shared_experts, false);
    }

    Op up = expert_gemm(p + "expert_up", OpKind::ExpertUp, layer, Sharding::ColumnParallel,
                        static_cast<std::int64_t>(h_), e.expert_ffn);
    up.params += static_cast<double>(e.experts) * bias_ * static_cast<double>(e.expert_ffn);
    up.active_params = up.params * k_ / static_cast<double>(e.experts);
    up.activation_bytes = 2 * t_ * k_ * h_;  // the permuted (dispatched) token copies
    up.ep_comm = EpComm::DispatchForwardCombineBackward;
    up.ep_comm_bytes = 2 * t_ * k_ * h_;
    Vertex vu = add(std::move(up));
    edge(vrt, vu);
    Vertex vd = mlp_rest(p, "expert_", layer, vrt, vu, static_cast<double>(e.expert_ffn), e.experts, true);
    if (last != vrt) edge(last, vd);
    return vd;
  }

  // One GEMM (k -> n) per routed expert over the mean tokens each expert receives.
  Op expert_gemm(std::string name, OpKind kind, int layer, Sharding sh, std::int64_t k, std::int64_t n) {
    const MoeSpec& e = *m_.moe;
    Op op = base(std::move(name), kind, layer, sh);
    const double experts = static_cast<double>(e.experts);
    const double routed_tokens = t_ * k_;  // token copies over all experts
    const double per_expert = routed_tokens / experts;
    op.gemm = {static_cast<std::int64_t>(std::ceil(per_expert)), n, k};
    op.gemm_count = e.experts;
    op.routed_expert = true;
    const double dk = static_cast<double>(k), dn = static_cast<double>(n);
    op.flops_fwd = 2 * routed_tokens * dn * dk;
    op.flops_bwd = 2 * op.flops_fwd;
    op.bytes_fwd = 2 * (routed_tokens * dk + experts * dk * dn + routed_tokens * dn);
    op.bytes_bwd = 2 * op.bytes_fwd;
    op.params = experts * dk * dn;
    return op;
  }

  // Final norm, LM head and loss of the main model (`p` empty) or of a multi-token-
  // prediction depth (`p` = "mtp1.", ...: the output head is the main model's, so it owns
  // no parameters; with tied embeddings the main head already brings the table's copy).
  void head(int group, Vertex x, const std::string& p = "") {
    Vertex n = norm(p + "final_norm", group);
    edge(x, n);

    Op lm = gemm(p + "lm_head", OpKind::LmHead, group, Sharding::VocabParallel,
                 static_cast<std::int64_t>(h_), m_.vocab);
    if (!p.empty()) lm.params = 0;
    if (m_.tied_embeddings && p.empty()) {
      lm.shared_params = lm.params;
      lm.params = 0;
    }
    lm.activation_bytes = 2 * t_ * h_;
    lm.tp_comm = TpComm::CopyForwardAllReduceBackward;
    lm.tp_comm_bytes = 2 * t_ * h_;
    Vertex vl = add(std::move(lm));
    edge(n, vl);

    Op loss = base(p + "loss", OpKind::Loss, group, Sharding::VocabParallel);
    loss.logits = static_cast<double>(t_) * static_cast<double>(V_);
    loss.bytes_fwd = 4 * t_ * V_;  // read the logits, write the softmax (the op-table key)
    loss.bytes_bwd = 2 * loss.bytes_fwd;
    loss.activation_bytes = 4 * t_ * V_;  // fp32 logits / softmax for the backward
    loss.tp_comm = TpComm::VocabAllReduce;
    loss.tp_comm_bytes = 3 * 4 * t_;  // fp32 max, sum of exp and target logit per token
    Vertex vloss = add(std::move(loss));
    edge(vl, vloss);
  }

  // The multi-token-prediction depths after the main head, in the head group (Megatron-Core
  // runs them on the last pipeline stage). `h` is the main model's last hidden state (the
  // final norm's input). Per depth d (ModelSpec::mtp_layers): the embedding of the tokens d
  // ahead through the shared table (a copy on the last stage when the embedding is elsewhere,
  // unless the tied head already holds it), enorm on it and hnorm on the previous depth's
  // hidden state, eh_proj on their concatenation (2h -> h, column-parallel, no bias), one
  // block like the last, and head(). Megatron gathers eh_proj's output over TP before the
  // block (2th bytes); that exchange is not charged separately (the input's is).
  void mtp(int group, Vertex h) {
    Op emb = base("mtp.embedding", OpKind::Embedding, group, Sharding::VocabParallel);
    const bool learned = m_.positions == Positions::Learned;
    emb.shared_params = m_.tied_embeddings ? 0.0 : V_ * h_ + (learned ? s_ * h_ : 0.0);
    emb.bytes_fwd = 2 * t_ * h_ * (learned ? 3 : 2) * static_cast<double>(m_.mtp_layers);
    emb.bytes_bwd = 2 * emb.bytes_fwd;
    emb.tp_comm = TpComm::VocabAllReduce;
    emb.tp_comm_bytes = 2 * t_ * h_ * static_cast<double>(m_.mtp_layers);
    Vertex ve = add(std::move(emb));
    for (std::int64_t d = 1; d <= m_.mtp_layers; ++d) {
      const std::string p = fmt::format("mtp{}.", d);
      Vertex en = norm(p + "enorm", group);
      edge(ve, en);
      Vertex hn = norm(p + "hnorm", group);
      edge(h, hn);
      Op proj = gemm(p + "eh_proj", OpKind::Qkv, group, Sharding::ColumnParallel,
                     2 * static_cast<std::int64_t>(h_), m_.hidden);
      proj.activation_bytes = 4 * t_ * h_;  // the concatenated input [enorm, hnorm]
      proj.tp_comm = TpComm::CopyForwardAllReduceBackward;
      proj.tp_comm_bytes = 4 * t_ * h_;
      Vertex vp = add(std::move(proj));
      edge(en, vp);
      edge(hn, vp);
      h = block(group, p, m_.mtp_block_is_moe(), vp);
      head(group, h, p);
    }
  }

 private:
  Op base(std::string name, OpKind kind, int layer, Sharding sh) {
    Op op;
    op.name = std::move(name);
    op.kind = kind;
    op.layer = layer;
    op.sharding = sh;
    return op;
  }

  // `count` identical GEMMs (k -> n) over all t tokens each (shared experts: count > 1).
  Op gemm(std::string name, OpKind kind, int layer, Sharding sh, std::int64_t k, std::int64_t n,
          std::int64_t count = 1) {
    Op op = base(std::move(name), kind, layer, sh);
    op.gemm = {tokens_, n, k};
    op.gemm_count = count;
    const double dk = static_cast<double>(k), dn = static_cast<double>(n), c = static_cast<double>(count);
    op.flops_fwd = c * 2 * t_ * dn * dk;
    op.flops_bwd = 2 * op.flops_fwd;  // dgrad + wgrad
    op.bytes_fwd = c * 2 * (t_ * dk + dk * dn + t_ * dn);
    op.bytes_bwd = 2 * op.bytes_fwd;
    op.params = c * dk * dn;
    return op;
  }

  Vertex norm(std::string name, int layer) {
    Op op = base(std::move(name), OpKind::Norm, layer, Sharding::Replicated);
    op.params = m_.norm == Norm::LayerNorm ? 2 * h_ : h_;
    op.bytes_fwd = 4 * t_ * h_;
    op.bytes_bwd = 2 * op.bytes_fwd;
    op.activation_bytes = 2 * t_ * h_;
    return add(std::move(op));
  }

  Vertex residual(std::string name, int layer) {
    Op op = base(std::move(name), OpKind::Residual, layer, Sharding::Replicated);
    op.bytes_fwd = 6 * t_ * h_;  // read two inputs, write the sum
    op.bytes_bwd = 2 * op.bytes_fwd;
    op.activation_bytes = t_ * h_;  // dropout mask
    return add(std::move(op));
  }

  Vertex add(Op op) { return boost::add_vertex(std::move(op), g_); }
  void edge(Vertex u, Vertex v) { boost::add_edge(u, v, g_); }

  const ModelSpec& m_;
  OpGraph& g_;
  double b_, s_, h_, a_, kv_, f_, V_, t_, bias_;
  double q_;  // width of Q and of the attention output (heads * head_dim)
  double k_;  // routed experts per token (MoE), 0 for dense models
  std::int64_t tokens_;
};

}  // namespace

ModelGraph ModelGraph::build(const ModelSpec& spec, std::int64_t micro_batch) {
  validate(spec, "model '" + spec.name + "'");
  if (micro_batch <= 0) input_error("micro_batch ({}) must be > 0", micro_batch);
  ModelGraph mg;
  mg.spec_ = spec;
  mg.micro_batch_ = micro_batch;
  Builder b(spec, micro_batch, mg.graph_);

  Vertex x = b.embedding();
  for (std::int64_t l = 1; l <= spec.layers; ++l)
    x = b.block(static_cast<int>(l), fmt::format("layer{}.", l), spec.is_moe_layer(l), x);
  const int last = static_cast<int>(spec.layers) + 1;
  b.head(last, x);
  if (spec.mtp_layers > 0) b.mtp(last, x);

  mg.groups_.resize(static_cast<std::size_t>(last) + 1);
  for (std::size_t i = 0; i < mg.groups_.size(); ++i) mg.groups_[i].index = static_cast<int>(i);
  for (std::size_t v = 0; v < mg.num_ops(); ++v) {
    Op& op = mg.graph_[v];
    if (!op.routed_expert) op.active_params = op.params;  // every token uses it
    LayerGroup& g = mg.groups_.at(static_cast<std::size_t>(op.layer));
    g.ops.push_back(v);  // vertices were added in a topological order
    g.params += op.params;
    g.active_params += op.active_params;
    g.flops_fwd += op.flops_fwd;
    g.flops_bwd += op.flops_bwd;
    g.activation_bytes += op.activation_bytes;
    g.selective_recompute_bytes += op.selective_recompute_bytes;
    g.shared_params += op.shared_params;
    g.bytes_fwd += op.bytes_fwd;
    g.bytes_bwd += op.bytes_bwd;
  }
  return mg;
}

std::vector<std::size_t> ModelGraph::topological_order() const {
  std::vector<Vertex> rev;
  rev.reserve(num_ops());
  try {
    boost::topological_sort(graph_, std::back_inserter(rev));
  } catch (const boost::not_a_dag&) {
    STRATA_CHECK(false, "model graph of '{}' has a cycle", spec_.name);
  }
  return {rev.rbegin(), rev.rend()};
}

namespace {
// The model's totals are sums of one field over every layer group.
double sum_over_groups(const std::vector<LayerGroup>& groups, double LayerGroup::*field) {
  double sum = 0;
  for (const auto& g : groups) sum += g.*field;
  return sum;
}
}  // namespace

double ModelGraph::total_params() const { return sum_over_groups(groups_, &LayerGroup::params); }
double ModelGraph::active_params() const { return sum_over_groups(groups_, &LayerGroup::active_params); }
double ModelGraph::total_flops_fwd() const { return sum_over_groups(groups_, &LayerGroup::flops_fwd); }
double ModelGraph::total_flops_bwd() const { return sum_over_groups(groups_, &LayerGroup::flops_bwd); }

}  // namespace strata::models
