// The memory `strata train` counts per rank (parameter store and optimizer state) under
// ZeRO 0..3 on dp2 and dp4, against byte counts worked out by hand for the tiny GPT:
// what each stage shards (ZeRO-1 the optimizer state, ZeRO-2 also the gradients, ZeRO-3
// also the parameters), the full-size gradients of one layer group at a time (ZeRO-2/3),
// and ZeRO-3's gathered parameters: two layer groups with prefetch (the one computing and
// the next), one without -- the planner's memory model (costmodel/memory_model.h: P/dp +
// two gathered groups).
#include <gtest/gtest.h>

#include <regex>

#include "tests/integration/runtime_mpi_util.h"

namespace strata::testing {
namespace {

// tiny (models/catalog/tiny.yaml): hidden 64, ffn 256, vocab 256, seq 32, 4 layers, GPT
// with biases, tied embeddings, learned positions. Parameters, by hand:
//   block: norm1 2x64 + qkv 192x64 + 192 + proj 64x64 + 64 + norm2 2x64
//          + fc 256x64 + 256 + down 64x256 + 64                          = 49984
//   embedding: wte 256x64 + wpe 32x64 = 18432; head: final norm 2x64 = 128 (+ tied wte)
//   P = 18432 + 4 x 49984 + 128 = 218496 (divisible by 2 and by 4: no padding)
// The largest layer group is a block; fp32 everywhere: 4 bytes per value, AdamW keeps
// two moments per value of the owned range.
constexpr std::size_t kBlock = 49984, kParams = 218496, kFloat = 4;

struct Counted {
  std::size_t params = 0, grads = 0, optimizer = 0, gathered_params = 0, gathered_grads = 0, total = 0;
};

Counted expected(int zero, std::size_t dp, bool prefetch) {
  Counted c;
  c.params = kFloat * (zero == 3 ? kParams / dp : kParams);
  c.grads = kFloat * (zero >= 2 ? kParams / dp : kParams);
  c.optimizer = kFloat * 2 * (zero >= 1 ? kParams / dp : kParams);
  c.gathered_params = zero == 3 ? kFloat * kBlock * (prefetch ? 2 : 1) : 0;
  c.gathered_grads = zero >= 2 ? kFloat * kBlock : 0;
  // the worst moment: a block's backward, with its gathered parameters (and the prefetched
  // next block's) and its full-size gradients
  c.total = c.params + c.grads + c.optimizer + c.gathered_params + c.gathered_grads;
  return c;
}

Counted counted(const std::string& out) {
  std::smatch m;
  const std::regex line(
      R"(memory per rank \(rank 0, counted by the runtime\): params (\d+) B .*, grads (\d+) B .*, )"
      R"(optimizer (\d+) B .*, peak gathered params (\d+) B .*, peak gathered grads (\d+) B .*, )"
      R"(peak total (\d+) B)");
  if (!std::regex_search(out, m, line)) {
    ADD_FAILURE() << "no memory line in:\n" << out;
    return {};
  }
  auto n = [&](int i) { return static_cast<std::size_t>(std::stoull(m[i].str())); };
  return {n(1), n(2), n(3), n(4), n(5), n(6)};
}

void expect_memory(int zero, int dp, bool prefetch = true) {
  const std::string name = "mem_zero" + std::to_string(zero) + "_dp" + std::to_string(dp) + (prefetch ? "" : "_noprefetch");
  const TempDir dir(name);
  Layout l;
  l.name = name;
  l.dp = dp;
  l.zero = zero;
  l.micro_batch = 1;
  l.global_batch = 2 * dp;  // two micro-batches per rank: gradients accumulate
  std::vector<std::string> extra;
  if (!prefetch) extra.push_back("--no-zero-prefetch");
  const TrainRun run = train(l, dir, 2, extra);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err << run.result.out;
  const Counted got = counted(run.result.out), want = expected(zero, static_cast<std::size_t>(dp), prefetch);
  EXPECT_EQ(got.params, want.params) << name;
  EXPECT_EQ(got.grads, want.grads) << name;
  EXPECT_EQ(got.optimizer, want.optimizer) << name;
  EXPECT_EQ(got.gathered_params, want.gathered_params) << name;
  EXPECT_EQ(got.gathered_grads, want.gathered_grads) << name;
  EXPECT_EQ(got.total, want.total) << name;
  std::printf("[ memory   ] %-22s params %zu, grads %zu, optimizer %zu, gathered %zu + %zu, peak %zu B\n",
              name.c_str(), got.params, got.grads, got.optimizer, got.gathered_params,
              got.gathered_grads, got.total);
}

TEST(RuntimeMemory, DataParallel2EveryZeroStage) {
  for (int zero : {0, 1, 2, 3}) expect_memory(zero, 2);
}

TEST(RuntimeMemory, DataParallel4ShardsFourWays) {
  for (int zero : {2, 3}) expect_memory(zero, 4);
}

TEST(RuntimeMemory, Zero3WithoutPrefetchGathersOneGroupAtATime) { expect_memory(3, 2, false); }

// tiny-moe (models/catalog/tiny-moe.yaml: hidden 64, heads 4, kv_heads 2, ffn 176, vocab
// 256, untied, RMSNorm, a dense block then 3 MoE blocks of 4 SwiGLU experts of width 32
// and a shared expert of width 64) on dp 2 x tp 2 with sequence parallel, per TP rank:
//   embedding 256x64/2 = 8192; attention (q 64 + k 32 + v 32) x 64 / 2 + 64x64/2 = 6144
//   dense block: 6144 + SwiGLU (2 x 176x64 + 64x176)/2 = 16896 + norms 128 = 23168
//   MoE block (dense part): 6144 + router 4x64 = 256 + shared (2 x 64x64 + 64x64)/2 = 6144
//                           + norms 128 = 12672
//   head: final norm 64 + LM head 256x64/2 = 8256
//   dense P = 8192 + 23168 + 3 x 12672 + 8256 = 77632
//   routed experts: 3 x 6144 = 18432 per expert; ep 2 holds 2 experts: 36864 (12288 a block)
constexpr std::size_t kMoeDense = 77632, kMoeExperts = 36864;

TEST(RuntimeMemory, MoeExpertsSplitOverEtpAndShardOverEdp) {
  auto run_layout = [](const Layout& l) {
    const TempDir dir(l.name);
    const TrainRun run = train(l, dir, 2);
    EXPECT_EQ(run.result.exit_code, 0) << run.result.err << run.result.out;
    return counted(run.result.out);
  };
  // etp 2: each rank holds half of every local expert's width.
  const Counted etp = run_layout({.name = "mem_moe_etp2", .model = "tiny-moe", .dp = 2, .tp = 2, .ep = 2,
                                  .etp = 2, .sequence_parallel = true, .global_batch = 4});
  EXPECT_EQ(etp.params, kFloat * (kMoeDense + kMoeExperts / 2));
  EXPECT_EQ(etp.optimizer, 2 * etp.params);
  // ZeRO-3, ep 2 (edp 2): dense over dp 2, experts over edp 2; gathered at most: the dense
  // block with the first MoE block (23168 + 12672, prefetched) and two MoE blocks' experts
  // (2 x 12288); gradients of one group: the dense block's 23168 and one block's experts.
  const Counted z3 = run_layout({.name = "mem_moe_zero3", .model = "tiny-moe", .dp = 2, .tp = 2, .ep = 2,
                                 .zero = 3, .sequence_parallel = true, .global_batch = 4});
  EXPECT_EQ(z3.params, kFloat * (kMoeDense / 2 + kMoeExperts / 2));
  EXPECT_EQ(z3.grads, z3.params);
  EXPECT_EQ(z3.optimizer, 2 * z3.params);
  EXPECT_EQ(z3.gathered_params, kFloat * ((23168 + 12672) + 2 * 12288));
  EXPECT_EQ(z3.gathered_grads, kFloat * (23168 + 12288));
}

// The CPU runtime trains in fp32 whatever the plan says. A plan made for a GPU in bf16 is
// still run (its layout is what the run checks), and the job header says that the loss,
// memory and step time are not the plan's; an fp32 plan for this host gets no such line.
TEST(RuntimeMemory, AGpuPlanInBf16SaysTheCpuRunIsFp32) {
  const TempDir dir("mem_bf16_plan");
  const Layout l{.name = "mem_bf16_plan", .dp = 1, .global_batch = 2};
  const std::string cpu_plan = write_plan(l, dir);
  planner::Plan gpu = planner::load_plan(cpu_plan);
  gpu.cluster = "dgx-a100";
  gpu.strategy.precision = "bf16";
  const std::string gpu_plan = (dir / "gpu.plan.yaml").string();
  write_file_atomic(gpu_plan, planner::plan_to_yaml(gpu));
  const std::string note = "the CPU runtime trains the same layout in fp32";
  const RunResult on_cpu = mpirun_strata(1, {"train", "--plan", cpu_plan, "--steps", "1", "--synthetic"});
  ASSERT_EQ(on_cpu.exit_code, 0) << on_cpu.err;
  EXPECT_EQ(on_cpu.out.find(note), std::string::npos) << on_cpu.out;
  const RunResult on_gpu = mpirun_strata(1, {"train", "--plan", gpu_plan, "--steps", "1", "--synthetic"});
  ASSERT_EQ(on_gpu.exit_code, 0) << on_gpu.err;
  const std::size_t at = on_gpu.out.find(note);
  ASSERT_NE(at, std::string::npos) << on_gpu.out;
  const std::string line = on_gpu.out.substr(on_gpu.out.rfind('\n', at) + 1, on_gpu.out.find('\n', at) - at);
  EXPECT_NE(line.find("dgx-a100 (a100-sxm-80gb) in bf16 precision"), std::string::npos) << line;
}

}  // namespace
}  // namespace strata::testing
