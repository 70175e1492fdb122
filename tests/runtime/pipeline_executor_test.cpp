// The pipeline executor on thread-ranks: GPipe, 1F1B and interleaved schedules over 2
// and 4 stages (even and uneven layer maps) give the one-rank loss and, stage by stage,
// the one-rank gradients (the tied embedding's two halves summed, as the embedding group
// all-reduce does).
#include "runtime/pipeline_executor.h"

#include <gtest/gtest.h>

#include <thread>

#include "model_test_util.h"
#include "planner/plan.h"
#include "thread_communicator.h"

namespace strata::runtime {
namespace {

using planner::ScheduleKind;

struct ScheduleCase {
  models::ModelSpec spec;
  int pp, vpp, microbatches;
  ScheduleKind kind;
  std::vector<std::vector<int>> stage_layers;  // empty: even
};

void check(const ScheduleCase& c) {
  const std::int64_t mb = 1;
  ModelDims d = make_model_dims(c.spec, mb, 1, 0, false, planner::Recompute::None);
  const auto layers = static_cast<int>(c.spec.layers);
  const float w = 1.0f / static_cast<float>(c.microbatches * static_cast<int>(d.rows()));
  std::vector<std::vector<std::int32_t>> tokens, targets;
  for (int m = 0; m < c.microbatches; ++m) {
    tokens.push_back(testing::random_tokens(d.rows(), static_cast<int>(d.vocab), 100 + static_cast<unsigned>(m)));
    targets.push_back(testing::random_tokens(d.rows(), static_cast<int>(d.vocab), 200 + static_cast<unsigned>(m)));
  }
  const MicroBatchFn data = [&](int m, std::vector<std::int32_t>& tk, std::vector<std::int32_t>& tg) {
    tk = tokens[static_cast<std::size_t>(m)];
    tg = targets[static_cast<std::size_t>(m)];
  };

  // one rank, all micro-batches
  testing::TestModel<float> whole(d, testing::whole_model(layers), 3, 0.1);
  double ref_loss = 0;
  {
    PipelineExecutor one({whole.chunk.get()}, nullptr);
    ref_loss = one.run(planner::build_schedule(ScheduleKind::OneFOneB, 1, 0, c.microbatches, 1), data, w);
  }

  const auto stage_layers = c.stage_layers.empty() ? planner::even_stage_layers(c.spec, c.pp, c.vpp) : c.stage_layers;
  testing::ThreadGroup group(c.pp);
  std::vector<std::vector<std::unique_ptr<testing::TestModel<float>>>> stages(static_cast<std::size_t>(c.pp));
  std::vector<double> losses(static_cast<std::size_t>(c.pp));
  std::vector<std::thread> th;
  for (int s = 0; s < c.pp; ++s)
    th.emplace_back([&, s] {
      testing::ThreadCommunicator comm(group, s);
      std::vector<ModelChunk<float>*> chunks;
      for (int ch = 0; ch < c.vpp; ++ch) {
        const auto layout = chunk_layout(stage_layers[static_cast<std::size_t>(ch * c.pp + s)], layers);
        stages[static_cast<std::size_t>(s)].push_back(std::make_unique<testing::TestModel<float>>(d, layout, 3, 0.1));
        chunks.push_back(stages[static_cast<std::size_t>(s)].back()->chunk.get());
      }
      PipelineExecutor ex(chunks, &comm);
      losses[static_cast<std::size_t>(s)] =
          ex.run(planner::build_schedule(c.kind, c.pp, s, c.microbatches, c.vpp), data, w);
    });
  for (auto& t : th) t.join();

  const std::string label = std::string(planner::to_string(c.kind)) + " pp" + std::to_string(c.pp) +
                            " vpp" + std::to_string(c.vpp);
  EXPECT_NEAR(losses.back(), ref_loss, 1e-6 * ref_loss) << label;
  for (int s = 0; s + 1 < c.pp; ++s) EXPECT_EQ(losses[static_cast<std::size_t>(s)], 0.0) << label;
  // every parameter's gradient, summed over the chunks that hold it
  for (const auto& e : whole.store.entries()) {
    std::vector<float> sum(e.numel, 0.0f);
    int holders = 0;
    for (auto& stage : stages)
      for (auto& m : stage)
        if (m->store.contains(e.spec.name)) {
          ++holders;
          const auto& pe = m->store.entry(e.spec.name);
          for (std::size_t i = 0; i < e.numel; ++i) sum[i] += m->store.grads()[pe.offset + i];
        }
    EXPECT_GE(holders, 1) << e.spec.name;
    float scale = 1e-6f;
    for (std::size_t i = 0; i < e.numel; ++i) scale = std::max(scale, std::abs(whole.store.grads()[e.offset + i]));
    for (std::size_t i = 0; i < e.numel; ++i)
      ASSERT_NEAR(sum[i], whole.store.grads()[e.offset + i], 1e-5 * scale) << label << " " << e.spec.name << "[" << i << "]";
  }
}

TEST(PipelineExecutor, GPipeAndOneFOneBMatchOneRank) {
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    check({testing::small_gpt(), 2, 1, 4, kind, {}});
    check({testing::small_llama(), 2, 1, 3, kind, {}});
  }
}

TEST(PipelineExecutor, FourStagesWithUnevenLayers) {
  auto spec = testing::small_gpt();
  spec.layers = 4;
  check({spec, 4, 1, 5, ScheduleKind::OneFOneB, {{0}, {1, 2, 3}, {4}, {5}}});
  check({spec, 2, 1, 2, ScheduleKind::OneFOneB, {{0, 1, 2, 3}, {4, 5}}});
}

TEST(PipelineExecutor, InterleavedMatchesOneRank) {
  auto spec = testing::small_gpt();
  spec.layers = 4;
  check({spec, 2, 2, 4, ScheduleKind::Interleaved, {}});
  spec.layers = 8;
  check({spec, 2, 4, 6, ScheduleKind::Interleaved, {}});
}

}  // namespace
}  // namespace strata::runtime
