// Sharded GEMM shapes of a model's layers: forward, dgrad and wgrad per tp, computed
// here from the spec by hand (Megatron's column/row split), compared with what the
// profiler derives from the model graph.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "kernels/profiler/gemm_problems.h"
#include "models/model_graph.h"
#include "models/model_spec.h"
#include "tests/test_models.h"

namespace strata::kernels::profiler {
namespace {

using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t>;

models::ModelSpec tiny_spec() { return strata::testing::test_model("t", 2, 64, 4, 4, 256, 256, 32); }

std::set<Shape> shapes(const std::vector<GemmProblem>& ps) {
  std::set<Shape> out;
  for (const auto& p : ps) out.insert({p.m, p.n, p.k});
  return out;
}

// fwd (m,n,k), dgrad (m,k,n), wgrad (k,n,m) of Y(m,n) = X(m,k) W(k,n).
void add_linear(std::set<Shape>& s, std::int64_t m, std::int64_t n, std::int64_t k) {
  s.insert({m, n, k});
  s.insert({m, k, n});
  s.insert({k, n, m});
}

TEST(GemmProblems, ShardsColumnAndRowParallelLayersPerTp) {
  auto spec = tiny_spec();
  auto graph = models::ModelGraph::build(spec, 2);
  const std::int64_t m = 2 * 32, h = 64, f = 256, v = 256;
  for (int tp : {1, 2, 4}) {
    std::set<Shape> expect;
    add_linear(expect, m, 3 * h / tp, h);  // QKV: column-parallel
    add_linear(expect, m, h, h / tp);      // out-proj: row-parallel
    add_linear(expect, m, f / tp, h);      // MLP up: column-parallel
    add_linear(expect, m, h, f / tp);      // MLP down: row-parallel
    add_linear(expect, m, v / tp, h);      // LM head: vocab-parallel
    EXPECT_EQ(shapes(model_gemm_problems(graph, {tp})), expect) << "tp " << tp;
  }
}

TEST(GemmProblems, SkipsTpThatDoesNotDivideHeads) {
  auto graph = models::ModelGraph::build(tiny_spec(), 1);
  EXPECT_EQ(usable_tp_degrees(graph, {1, 2, 3, 4, 8, 2}), (std::vector<int>{1, 2, 4}));
  EXPECT_TRUE(model_gemm_problems(graph, {3, 8}).empty());
}

TEST(GemmProblems, OriginsNameModelOpPassAndTp) {
  auto graph = models::ModelGraph::build(tiny_spec(), 1);
  bool found = false;
  for (const auto& p : model_gemm_problems(graph, {2}))
    if (p.origin == "t qkv dgrad tp2") {
      found = true;
      EXPECT_EQ(p.m, 32);
      EXPECT_EQ(p.n, 64);
      EXPECT_EQ(p.k, 96);
    }
  EXPECT_TRUE(found);
}

TEST(GemmProblems, AttentionProxyShapes) {
  auto graph = models::ModelGraph::build(tiny_spec(), 4);
  EXPECT_EQ(shapes(attention_gemm_problems(graph)), (std::set<Shape>{{32, 32, 16}, {32, 16, 32}}));
}

TEST(GemmProblems, SquareSweepIsPowersOfTwo) {
  auto sq = square_gemm_problems(128, 1024);
  EXPECT_EQ(shapes(sq), (std::set<Shape>{{128, 128, 128}, {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}}));
  EXPECT_TRUE(square_gemm_problems(256, 128).empty());
}

TEST(GemmProblems, DedupeMergesOriginsAndSortsByFlops) {
  std::vector<GemmProblem> ps{{64, 64, 64, "a"}, {8, 8, 8, "b"}, {64, 64, 64, "c"}, {8, 8, 8, "b"}};
  auto d = dedupe_gemm_problems(ps);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].m, 8);
  EXPECT_EQ(d[0].origin, "b");
  EXPECT_EQ(d[1].origin, "a; c");
}

// tiny-moe (catalog): hidden 64, 4 routed experts of width 32, top-2, seq 32. With
// micro-batch 2: 64 tokens, 128 routed copies, m0 = 128 / 4 = 32 tokens per expert.
// Layouts tp in {1, 2}, etp in {1, 2}, ep in {1, 2, 4}: m = 32 * ep * etp / tp.
TEST(GemmProblems, ExpertShapesPerEpEtpAndTp) {
  auto graph = models::ModelGraph::build(models::load_model("tiny-moe"), 2);
  std::set<Shape> expect;
  for (int etp : {1, 2})
    for (int ep : {1, 2, 4})
      for (int tp : {1, 2}) {
        const std::int64_t m = 32 * ep * etp / tp;
        add_linear(expect, m, 32 / etp, 64);  // up and gate: column-parallel over etp
        add_linear(expect, m, 64, 32 / etp);  // down: row-parallel over etp
      }
  EXPECT_EQ(shapes(expert_gemm_problems(graph, {1, 2})), expect);
  // The dense problems no longer carry the routed experts' unsharded shape (m0, 32, 64).
  EXPECT_EQ(shapes(model_gemm_problems(graph, {1})).count(Shape{32, 32, 64}), 0u);
  EXPECT_TRUE(expert_gemm_problems(models::ModelGraph::build(tiny_spec(), 1), {1, 2}).empty());
}

}  // namespace
}  // namespace strata::kernels::profiler
