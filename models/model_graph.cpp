#include "models/model_graph.h"

#include <algorithm>
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

  // One transformer block; `x` is the residual stream entering it. Returns its output.
  Vertex block(int layer, Vertex x) {
    const std::string p = fmt::format("layer{}.", layer);
    Vertex n1 = norm(p + "norm1", layer);
    edge(x, n1);

    Op qkv = gemm(p + "qkv", OpKind::Qkv, layer, Sharding::ColumnParallel,
                  static_cast<std::int64_t>(h_), m_.heads * m_.head_dim() + 2 * m_.kv_dim());
    qkv.params += bias_ * (h_ + 2 * kv_);
    qkv.activation_bytes = 2 * t_ * h_;
    qkv.tp_comm = TpComm::CopyForwardAllReduceBackward;
    qkv.tp_comm_bytes = 2 * t_ * h_;
    Vertex vqkv = add(std::move(qkv));
    edge(n1, vqkv);

    Vertex before_attn = vqkv;
    if (m_.positions == Positions::Rope) {
      Op rope = base(p + "rope", OpKind::Rope, layer, Sharding::HeadParallel);
      rope.bytes_fwd = 2 * (2 * t_ * (h_ + kv_));  // read and write Q and K
      rope.bytes_bwd = 2 * rope.bytes_fwd;
      Vertex vr = add(std::move(rope));
      edge(vqkv, vr);
      before_attn = vr;
    }

    Op attn = base(p + "attention_core", OpKind::AttentionCore, layer, Sharding::HeadParallel);
    attn.attention = {static_cast<std::int64_t>(b_), m_.heads, m_.kv_heads, m_.seq_len,
                      m_.head_dim()};
    attn.flops_fwd = 4 * b_ * s_ * s_ * h_;  // QK^T and AV, causal halving left to the cost model
    attn.flops_bwd = 2 * attn.flops_fwd;
    attn.bytes_fwd = 2 * t_ * (h_ + 2 * kv_) + 2 * t_ * h_;  // read Q, K, V; write O
    attn.bytes_bwd = 2 * attn.bytes_fwd;
    attn.selective_recompute_bytes = 5 * a_ * s_ * s_ * b_;
    attn.activation_bytes = 2 * t_ * h_ + 4 * t_ * kv_ + attn.selective_recompute_bytes;
    Vertex va = add(std::move(attn));
    edge(before_attn, va);

    Op out = gemm(p + "out_proj", OpKind::OutProj, layer, Sharding::RowParallel,
                  static_cast<std::int64_t>(h_), m_.hidden);
    out.params += bias_ * h_;
    out.activation_bytes = 2 * t_ * h_;
    out.tp_comm = TpComm::AllReduceForwardCopyBackward;
    out.tp_comm_bytes = 2 * t_ * h_;
    Vertex vo = add(std::move(out));
    edge(va, vo);

    Vertex r1 = residual(p + "residual1", layer);
    edge(vo, r1);
    edge(x, r1);

    Vertex n2 = norm(p + "norm2", layer);
    edge(r1, n2);

    Op up = gemm(p + "mlp_up", OpKind::MlpUp, layer, Sharding::ColumnParallel,
                 static_cast<std::int64_t>(h_), m_.ffn);
    up.params += bias_ * f_;
    up.activation_bytes = 2 * t_ * h_;
    up.tp_comm = TpComm::CopyForwardAllReduceBackward;
    up.tp_comm_bytes = 2 * t_ * h_;
    Vertex vu = add(std::move(up));
    edge(n2, vu);

    const bool swiglu = m_.activation == Activation::SwiGlu;
    Vertex vg = vu;
    if (swiglu) {
      Op gate = gemm(p + "mlp_gate", OpKind::MlpGate, layer, Sharding::ColumnParallel,
                     static_cast<std::int64_t>(h_), m_.ffn);
      gate.params += bias_ * f_;
      vg = add(std::move(gate));
      edge(n2, vg);
    }

    Op act = base(p + "activation", OpKind::Activation, layer, Sharding::ColumnParallel);
    act.bytes_fwd = (swiglu ? 6 : 4) * t_ * f_;  // read gate (+ up), write the product
    act.bytes_bwd = 2 * act.bytes_fwd;
    act.activation_bytes = (swiglu ? 4 : 2) * t_ * f_;
    Vertex vact = add(std::move(act));
    edge(vu, vact);
    if (swiglu) edge(vg, vact);

    Op down = gemm(p + "mlp_down", OpKind::MlpDown, layer, Sharding::RowParallel, m_.ffn,
                   m_.hidden);
    down.params += bias_ * h_;
    down.activation_bytes = 2 * t_ * f_;
    down.tp_comm = TpComm::AllReduceForwardCopyBackward;
    down.tp_comm_bytes = 2 * t_ * h_;
    Vertex vd = add(std::move(down));
    edge(vact, vd);

    Vertex r2 = residual(p + "residual2", layer);
    edge(vd, r2);
    edge(r1, r2);
    return r2;
  }

  void head(int group, Vertex x) {
    Vertex n = norm("final_norm", group);
    edge(x, n);

    Op lm = gemm("lm_head", OpKind::LmHead, group, Sharding::VocabParallel,
                 static_cast<std::int64_t>(h_), m_.vocab);
    if (m_.tied_embeddings) {
      lm.shared_params = lm.params;
      lm.params = 0;
    }
    lm.activation_bytes = 2 * t_ * h_;
    lm.tp_comm = TpComm::CopyForwardAllReduceBackward;
    lm.tp_comm_bytes = 2 * t_ * h_;
    Vertex vl = add(std::move(lm));
    edge(n, vl);

    Op loss = base("loss", OpKind::Loss, group, Sharding::VocabParallel);
    loss.bytes_fwd = 4 * t_ * V_;  // read the logits, write the softmax
    loss.bytes_bwd = 2 * loss.bytes_fwd;
    loss.activation_bytes = 4 * t_ * V_;  // fp32 logits / softmax for the backward
    loss.tp_comm = TpComm::VocabAllReduce;
    loss.tp_comm_bytes = 3 * 4 * t_;  // fp32 max, sum of exp and target logit per token
    Vertex vloss = add(std::move(loss));
    edge(vl, vloss);
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

  Op gemm(std::string name, OpKind kind, int layer, Sharding sh, std::int64_t k, std::int64_t n) {
    Op op = base(std::move(name), kind, layer, sh);
    op.gemm = {tokens_, n, k};
    const double dk = static_cast<double>(k), dn = static_cast<double>(n);
    op.flops_fwd = 2 * t_ * dn * dk;
    op.flops_bwd = 2 * op.flops_fwd;  // dgrad + wgrad
    op.bytes_fwd = 2 * (t_ * dk + dk * dn + t_ * dn);
    op.bytes_bwd = 2 * op.bytes_fwd;
    op.params = dk * dn;
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
  for (std::int64_t l = 1; l <= spec.layers; ++l) x = b.block(static_cast<int>(l), x);
  const int last = static_cast<int>(spec.layers) + 1;
  b.head(last, x);

  mg.groups_.resize(static_cast<std::size_t>(last) + 1);
  for (std::size_t i = 0; i < mg.groups_.size(); ++i) mg.groups_[i].index = static_cast<int>(i);
  for (std::size_t v = 0; v < mg.num_ops(); ++v) {
    const Op& op = mg.graph_[v];
    LayerGroup& g = mg.groups_.at(static_cast<std::size_t>(op.layer));
    g.ops.push_back(v);  // vertices were added in a topological order
    g.params += op.params;
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

double ModelGraph::total_params() const {
  double p = 0;
  for (const auto& g : groups_) p += g.params;
  return p;
}

double ModelGraph::total_flops_fwd() const {
  double f = 0;
  for (const auto& g : groups_) f += g.flops_fwd;
  return f;
}

double ModelGraph::total_flops_bwd() const {
  double f = 0;
  for (const auto& g : groups_) f += g.flops_bwd;
  return f;
}

}  // namespace strata::models
