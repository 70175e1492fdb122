#include "models/model_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <boost/graph/topological_sort.hpp>
#include <gtest/gtest.h>

#include "tests/models/model_test_util.h"

#include "common/errors.h"
#include "models/catalog.h"
#include "models/model_stats.h"

using namespace strata::models;

namespace {

using strata::models::testing::rel;

const ModelGraph& gpt3(std::int64_t micro_batch) {
  static std::map<std::int64_t, ModelGraph> cache;
  auto it = cache.find(micro_batch);
  if (it == cache.end())
    it = cache.emplace(micro_batch, ModelGraph::build(load_model("gpt3-175b"), micro_batch)).first;
  return it->second;
}

std::size_t count_kind(const ModelGraph& g, const LayerGroup& grp, OpKind k) {
  return static_cast<std::size_t>(std::count_if(grp.ops.begin(), grp.ops.end(),
                                                [&](std::size_t v) { return g.op(v).kind == k; }));
}

}  // namespace

TEST(ModelGraph, Gpt3ParametersMatchClosedForm) {
  const ModelGraph& g = gpt3(1);
  const double l = 96, h = 12288, V = 51200, s = 2048;
  // 12*l*h^2*(1 + 13/(12h)) per blocks, V*h tied embedding, s*h learned positions,
  // plus the final LayerNorm (2h).
  const double closed = 12 * l * h * h * (1 + 13 / (12 * h)) + V * h + s * h + 2 * h;
  EXPECT_LT(rel(g.total_params(), closed), 1e-12);
  EXPECT_LT(rel(g.total_params(), 174.6e9), 0.01) << g.total_params();
}

TEST(ModelGraph, LlamaParameterCountsMatchPublishedSizes) {
  // Llama 2 7B: 6.74e9 (HF model card "7B" = 6,738,415,616); Llama 3 8B: 8.03e9.
  EXPECT_LT(rel(ModelGraph::build(load_model("llama2-7b"), 1).total_params(), 6.74e9), 0.01);
  EXPECT_LT(rel(ModelGraph::build(load_model("llama3-8b"), 1).total_params(), 8.03e9), 0.01);
  EXPECT_LT(rel(ModelGraph::build(load_model("llama2-70b"), 1).total_params(), 68.98e9), 0.01);
  EXPECT_LT(rel(ModelGraph::build(load_model("gpt2-124m"), 1).total_params(), 124.44e6), 0.01);
  // Exact: Llama-2-7B's safetensors hold 6,738,415,616 parameters.
  EXPECT_EQ(ModelGraph::build(load_model("llama2-7b"), 1).total_params(), 6738415616.0);
}

// Narayanan et al. 2021: with full recompute an iteration of batch B costs
// 96*B*s*l*h^2*(1 + s/(6h) + V/(16lh)) FLOPs. The graph gives forward + backward of
// every op for one micro-batch; recompute adds one forward of every block.
TEST(ModelGraph, FlopsWithFullRecomputeMatchNarayanan) {
  for (std::int64_t b : {1, 2, 8}) {
    const ModelGraph& g = gpt3(b);
    const std::int64_t B = 1536;
    double per_micro = 0, recompute = 0;
    for (const auto& grp : g.groups()) {
      per_micro += grp.flops_fwd + grp.flops_bwd;
      if (grp.index >= 1 && grp.index <= 96) recompute += grp.flops_fwd;
    }
    const double graph = (per_micro + recompute) * static_cast<double>(B / b);
    const double s = 2048, l = 96, h = 12288, V = 51200;
    const double formula = 96.0 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    EXPECT_LT(rel(graph, formula), 1e-9) << "micro_batch " << b;
  }
}

// Korthikanti et al. 2022, Table 2: a GPT block saves s*b*h*(34 + 5as/h) bytes.
TEST(ModelGraph, ActivationBytesPerBlockMatchKorthikanti) {
  for (const char* name : {"gpt3-175b", "megatron-1.7b", "gpt2-124m", "tiny"}) {
    for (std::int64_t b : {1, 4}) {
      ModelSpec m = load_model(name);
      ModelGraph g = ModelGraph::build(m, b);
      const double s = m.seq_len, h = m.hidden, a = m.heads;
      const double expected = s * b * h * (34 + 5 * a * s / h);
      for (std::int64_t l = 1; l <= m.layers; ++l)
        ASSERT_LT(rel(g.groups()[l].activation_bytes, expected), 1e-12) << name << " layer " << l;
      // Selective recompute drops exactly the 5as^2b attention-score term.
      EXPECT_LT(rel(g.groups()[1].selective_recompute_bytes, 5 * a * s * s * b), 1e-12);
    }
  }
}

TEST(ModelGraph, IsADagWithEdgesAlongVertexOrder) {
  for (const char* name : {"gpt2-124m", "tiny-llama", "llama3-8b"}) {
    ModelGraph g = ModelGraph::build(load_model(name), 1);
    std::vector<std::size_t> order;
    ASSERT_NO_THROW(order = g.topological_order());
    ASSERT_EQ(order.size(), g.num_ops());
    std::vector<std::size_t> pos(g.num_ops());
    for (std::size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
    for (auto [e, end] = boost::edges(g.graph()); e != end; ++e) {
      auto u = boost::source(*e, g.graph()), v = boost::target(*e, g.graph());
      EXPECT_LT(pos[u], pos[v]);
      EXPECT_LT(u, v) << "vertex ids are a topological order";
      EXPECT_LE(g.op(u).layer, g.op(v).layer) << "data flows forward through the groups";
    }
    // Exactly one source (the embedding) and one sink (the loss).
    int sources = 0, sinks = 0;
    for (std::size_t v = 0; v < g.num_ops(); ++v) {
      sources += boost::in_degree(v, g.graph()) == 0;
      sinks += boost::out_degree(v, g.graph()) == 0;
    }
    EXPECT_EQ(sources, 1);
    EXPECT_EQ(sinks, 1);
  }
}

TEST(ModelGraph, GroupsAreEmbeddingBlocksAndHead) {
  ModelSpec m = load_model("tiny-llama");
  ModelGraph g = ModelGraph::build(m, 2);
  ASSERT_EQ(g.groups().size(), static_cast<std::size_t>(m.layers + 2));
  const auto& first = g.groups().front();
  ASSERT_EQ(first.ops.size(), 1u);
  EXPECT_EQ(g.op(first.ops[0]).kind, OpKind::Embedding);
  const auto& last = g.groups().back();
  ASSERT_EQ(last.ops.size(), 3u);
  EXPECT_EQ(g.op(last.ops[0]).kind, OpKind::Norm);
  EXPECT_EQ(g.op(last.ops[1]).kind, OpKind::LmHead);
  EXPECT_EQ(g.op(last.ops[2]).kind, OpKind::Loss);
  std::size_t total = 0;
  for (std::size_t i = 0; i < g.groups().size(); ++i) {
    const auto& grp = g.groups()[i];
    EXPECT_EQ(grp.index, static_cast<int>(i));
    EXPECT_TRUE(std::is_sorted(grp.ops.begin(), grp.ops.end()));
    for (auto v : grp.ops) EXPECT_EQ(g.op(v).layer, grp.index);
    total += grp.ops.size();
  }
  EXPECT_EQ(total, g.num_ops());
  // Llama block: 2 norms, qkv, rope, attention, out-proj, up, gate, activation, down, 2 residuals.
  const auto& blk = g.groups()[1];
  EXPECT_EQ(blk.ops.size(), 12u);
  EXPECT_EQ(count_kind(g, blk, OpKind::Rope), 1u);
  EXPECT_EQ(count_kind(g, blk, OpKind::MlpGate), 1u);
  // GPT block: no rope, no gate.
  ModelGraph gpt = ModelGraph::build(load_model("tiny"), 1);
  EXPECT_EQ(gpt.groups()[1].ops.size(), 10u);
  EXPECT_EQ(count_kind(gpt, gpt.groups()[1], OpKind::Rope), 0u);
  EXPECT_EQ(count_kind(gpt, gpt.groups()[1], OpKind::MlpGate), 0u);
}

TEST(ModelGraph, ResidualStreamConnectsBlocks) {
  ModelGraph g = ModelGraph::build(load_model("tiny"), 1);
  for (std::size_t l = 1; l <= 4; ++l) {
    for (auto v : g.groups()[l].ops) {
      if (g.op(v).kind != OpKind::Residual) continue;
      EXPECT_EQ(boost::in_degree(v, g.graph()), 2u) << g.op(v).name;
    }
    // The block's first op (norm1) reads the previous group's output.
    auto norm1 = g.groups()[l].ops.front();
    auto [in, in_end] = boost::in_edges(norm1, g.graph());
    ASSERT_NE(in, in_end);
    EXPECT_EQ(g.op(boost::source(*in, g.graph())).layer, static_cast<int>(l) - 1);
  }
}

TEST(ModelGraph, GemmAndAttentionFlopsFollowShapes) {
  ModelSpec m = load_model("llama3-8b");
  const std::int64_t b = 2;
  ModelGraph g = ModelGraph::build(m, b);
  const std::int64_t T = b * m.seq_len;
  for (std::size_t v = 0; v < g.num_ops(); ++v) {
    const Op& op = g.op(v);
    SCOPED_TRACE(op.name);
    if (is_gemm(op.kind)) {
      EXPECT_EQ(op.gemm.m, T);
      EXPECT_DOUBLE_EQ(op.flops_fwd, 2.0 * op.gemm.m * op.gemm.n * op.gemm.k);
      EXPECT_DOUBLE_EQ(op.flops_bwd, 2 * op.flops_fwd);
    } else if (op.kind == OpKind::AttentionCore) {
      EXPECT_DOUBLE_EQ(op.flops_fwd, 4.0 * b * m.seq_len * m.seq_len * m.hidden);
      EXPECT_DOUBLE_EQ(op.flops_bwd, 2 * op.flops_fwd);
      EXPECT_EQ(op.attention.kv_heads, 8);
      EXPECT_EQ(op.attention.head_dim, 128);
    } else {
      EXPECT_EQ(op.flops_fwd, 0) << "elementwise work is in bytes, not FLOPs";
      EXPECT_GT(op.bytes_fwd, 0);
    }
    if (op.kind == OpKind::Qkv) {
      EXPECT_EQ(op.gemm.k, 4096);
      EXPECT_EQ(op.gemm.n, 4096 + 2 * 8 * 128);  // GQA: 8 K and 8 V heads
    }
  }
}

TEST(ModelGraph, TensorParallelTagsFollowMegatron) {
  ModelSpec m = load_model("gpt2-124m");
  const std::int64_t b = 3;
  ModelGraph g = ModelGraph::build(m, b);
  const double bsh2 = 2.0 * b * m.seq_len * m.hidden;
  for (std::int64_t l = 1; l <= m.layers; ++l) {
    int f = 0, gg = 0;
    for (auto v : g.groups()[l].ops) {
      const Op& op = g.op(v);
      if (op.tp_comm == TpComm::CopyForwardAllReduceBackward) {
        ++f;
        EXPECT_EQ(op.sharding, Sharding::ColumnParallel) << op.name;
        EXPECT_DOUBLE_EQ(op.tp_comm_bytes, bsh2);
      }
      if (op.tp_comm == TpComm::AllReduceForwardCopyBackward) {
        ++gg;
        EXPECT_EQ(op.sharding, Sharding::RowParallel) << op.name;
        EXPECT_DOUBLE_EQ(op.tp_comm_bytes, bsh2);
      }
      if (op.kind == OpKind::AttentionCore) { EXPECT_EQ(op.sharding, Sharding::HeadParallel); }
      if (op.kind == OpKind::Norm || op.kind == OpKind::Residual) {
        EXPECT_EQ(op.sharding, Sharding::Replicated);
      }
    }
    // Two f and two g per block: 2 all-reduces forward, 2 backward.
    EXPECT_EQ(f, 2);
    EXPECT_EQ(gg, 2);
  }
  EXPECT_EQ(with_sequence_parallel(TpComm::CopyForwardAllReduceBackward),
            TpComm::AllGatherForwardReduceScatterBackward);
  EXPECT_EQ(with_sequence_parallel(TpComm::AllReduceForwardCopyBackward),
            TpComm::ReduceScatterForwardAllGatherBackward);
  EXPECT_EQ(with_sequence_parallel(TpComm::VocabAllReduce), TpComm::VocabAllReduce);
}

TEST(ModelGraph, TiedLmHeadSharesTheEmbeddingTable) {
  ModelSpec m = load_model("tiny");
  ModelGraph tied = ModelGraph::build(m, 1);
  const auto& head = tied.groups().back();
  EXPECT_EQ(head.shared_params, static_cast<double>(m.vocab * m.hidden));
  m.tied_embeddings = false;
  ModelGraph untied = ModelGraph::build(m, 1);
  EXPECT_EQ(untied.groups().back().shared_params, 0);
  EXPECT_EQ(untied.total_params() - tied.total_params(), static_cast<double>(m.vocab * m.hidden));
}

TEST(ModelGraph, ScalesLinearlyWithMicroBatch) {
  ModelSpec m = load_model("tiny-llama");
  ModelGraph g1 = ModelGraph::build(m, 1), g4 = ModelGraph::build(m, 4);
  EXPECT_DOUBLE_EQ(g4.total_flops_fwd(), 4 * g1.total_flops_fwd());
  EXPECT_DOUBLE_EQ(g4.total_flops_bwd(), 4 * g1.total_flops_bwd());
  EXPECT_DOUBLE_EQ(g4.groups()[2].activation_bytes, 4 * g1.groups()[2].activation_bytes);
  EXPECT_EQ(g4.total_params(), g1.total_params());
}

// The graph (summed op by op) and model_stats (closed forms) are two independent
// paths; they must agree for every catalog model.
TEST(ModelGraph, AgreesWithClosedFormsForEveryCatalogModel) {
  for (const auto& e : model_catalog()) {
    SCOPED_TRACE(e.name);
    ModelSpec m = load_model(e.name);
    if (m.layers > 40) m.layers = 40;  // the per-block checks do not depend on depth
    ModelGraph g = ModelGraph::build(m, 2);
    EXPECT_LT(rel(g.total_params(), total_params(m)), 1e-12);
    // The first and the last block (dense and MoE blocks differ in MoE models).
    for (const std::int64_t l : {std::int64_t{1}, m.layers}) {
      const LayerGroup& lg = g.groups()[static_cast<std::size_t>(l)];
      EXPECT_LT(rel(lg.params, layer_params(m, l)), 1e-12) << l;
      EXPECT_LT(rel(lg.active_params, layer_active_params(m, l)), 1e-12) << l;
      EXPECT_LT(rel(lg.flops_fwd, layer_flops_fwd(m, 2, l)), 1e-12) << l;
      EXPECT_LT(rel(lg.activation_bytes, layer_activation_bytes(m, 2, l)), 1e-12) << l;
    }
    if (!m.moe) {
      EXPECT_LT(rel(g.groups()[1].params, block_params(m)), 1e-12);
      EXPECT_LT(rel(g.groups()[1].flops_fwd, block_flops_fwd(m, 2)), 1e-12);
      EXPECT_LT(rel(g.groups()[1].activation_bytes, block_activation_bytes(m, 2)), 1e-12);
    }
    EXPECT_LT(rel(g.groups()[0].params, embedding_params(m)), 1e-12);
    // The head group: the LM head, and per MTP depth (deepseek-v3) one more LM head, a block
    // like the last and eh_proj (2 x tokens x 2h x h).
    const double h = static_cast<double>(m.hidden), tokens = 2.0 * static_cast<double>(m.seq_len);
    const double mtp = static_cast<double>(m.mtp_layers);
    EXPECT_LT(rel(g.groups().back().flops_fwd,
                  (1 + mtp) * lm_head_flops_fwd(m, 2) +
                      mtp * (layer_flops_fwd(m, 2, m.layers) + 2 * tokens * 2 * h * h)),
              1e-12);
    EXPECT_LT(rel(g.total_flops_fwd() + g.total_flops_bwd(), training_flops(m, 2, false)), 1e-12);
  }
}

TEST(ModelGraph, RejectsBadMicroBatch) {
  ModelSpec m = load_model("tiny");
  EXPECT_THROW(ModelGraph::build(m, 0), strata::InputError);
  EXPECT_THROW(ModelGraph::build(m, -2), strata::InputError);
  EXPECT_THROW(ModelGraph::build(m, std::int64_t{1} << 62), strata::InputError);  // b*s overflows
  m.heads = 3;
  EXPECT_THROW(ModelGraph::build(m, 1), strata::InputError);  // spec re-validated
}

// Per-head Q and K norms (model.qk_norm, Qwen3): two norm ops per block between the QKV
// projection and RoPE, sharded with the heads, moving Q's and K's bytes (2 bytes a value,
// read and write; the backward twice that) and keeping their inputs; head_dim weights each.
TEST(ModelGraph, QkNormsSitBetweenQkvAndRope) {
  ModelSpec m = load_model("llama3-8b");  // q 4096, k 8 x 128 = 1024
  m.qk_norm = true;
  const std::int64_t b = 1;
  const ModelGraph g = ModelGraph::build(m, b);
  const double T = static_cast<double>(b * m.seq_len);
  int seen = 0;
  for (std::size_t v = 0; v < g.num_ops(); ++v) {
    const Op& op = g.op(v);
    const bool q = op.name.ends_with("q_head_norm"), k = op.name.ends_with("k_head_norm");
    if (!q && !k) continue;
    ++seen;
    SCOPED_TRACE(op.name);
    const double width = q ? 4096 : 1024;
    EXPECT_EQ(op.kind, OpKind::Norm);
    EXPECT_EQ(op.sharding, Sharding::HeadParallel);
    EXPECT_DOUBLE_EQ(op.params, 128);
    EXPECT_DOUBLE_EQ(op.bytes_fwd, 4 * T * width);
    EXPECT_DOUBLE_EQ(op.bytes_bwd, 8 * T * width);
    EXPECT_DOUBLE_EQ(op.activation_bytes, 2 * T * width);
  }
  EXPECT_EQ(seen, 2 * 32);
  ModelSpec plain = m;
  plain.qk_norm = false;
  EXPECT_DOUBLE_EQ(g.total_params() - ModelGraph::build(plain, b).total_params(), 32.0 * 2 * 128);
  EXPECT_DOUBLE_EQ(g.total_params(), total_params(m));
}
