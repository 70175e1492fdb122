#include "calibration/block_benchmark.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "common/errors.h"
#include "costmodel/block_table.h"
#include "kernels/backend.h"
#include "kernels/profiler/group_reduce.h"
#include "kernels/profiler/gemm_check.h"
#include "planner/strategy.h"
#include "runtime/model_dims.h"
#include "runtime/parameter_store.h"
#include "runtime/transformer_block.h"

namespace strata::calibration {

using namespace strata::runtime;

namespace {

namespace kp = strata::kernels::profiler;
using Clock = std::chrono::steady_clock;

// Rank 0 of a TP group whose peers are not there: the block's collectives keep its
// shapes and data finite without moving anything (the cost model charges TP
// communication separately). Only what tp_regions calls is needed.
class LocalStandInCommunicator final : public kernels::Communicator {
 public:
  explicit LocalStandInCommunicator(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  void all_reduce_sum(float*, std::size_t) override {}
  void all_gather(const float* send, float* recv, std::size_t count) override {
    for (int r = 0; r < size_; ++r) std::memmove(recv + static_cast<std::size_t>(r) * count, send, count * sizeof(float));
  }
  void reduce_scatter_sum(const float* send, float* recv, std::size_t count) override {
    std::memmove(recv, send, count * sizeof(float));
  }
  void all_to_all(const float*, float*, std::size_t) override { unsupported("all_to_all"); }
  void broadcast(float*, std::size_t, int) override { unsupported("broadcast"); }
  void send(const float*, std::size_t, int) override { unsupported("send"); }
  void recv(float*, std::size_t, int) override { unsupported("recv"); }
  void barrier() override {}
  const char* transport() const override { return "none (block benchmark)"; }

 private:
  [[noreturn]] static void unsupported(const char* what) {
    throw InternalError(fmt::format("block benchmark: a transformer block called {}", what));
  }
  int size_;
};

// Blocks chained like a model chunk: forward through all, backward in reverse.
constexpr int kChainMax = 4;
constexpr double kChainParamBytes = 256.0 * 1024 * 1024;  // keep the chain this small

struct Chain {
  ParameterStore<float> store;
  std::vector<std::unique_ptr<TransformerBlock<float>>> blocks;
  std::vector<BlockActivations<float>> acts;
  std::vector<std::vector<float>> x;  // x[i] input of block i, x[n] output
  std::vector<float> dy_top;  // gradient at the chain's output (the same every pass)
  std::vector<float> g0, g1;   // gradients between blocks (ping-pong)
};

double block_param_floats(const ModelDims& d) {
  double n = 0;
  for (const auto& p : TransformerBlock<float>::param_specs(d, 0)) n += static_cast<double>(p.local_numel());
  return n;
}

// Floats one block keeps for one micro-batch (BlockActivations with recompute none).
double block_activation_floats(const ModelDims& d) {
  const double N = static_cast<double>(d.rows()), Nl = static_cast<double>(d.local_rows());
  const double C = static_cast<double>(d.hidden), F = static_cast<double>(d.ffn_local());
  const double qkv = static_cast<double>(d.qkv_width_local()), q = static_cast<double>(d.q_width_local());
  const double probs = static_cast<double>(d.batch * d.heads_local() * d.seq * d.seq);
  return Nl * (4 * C + 4) + 2 * N * C + N * qkv + probs + N * q + N * F * (d.gelu() ? 2 : 3);
}

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Forward and backward seconds of one block for one micro-batch: medians over samples,
// each sample a burst of chained forward/backward passes. Every rank of `sync` runs the
// same number of passes (they may talk to each other inside the blocks).
std::pair<double, double> time_chain(Chain& c, const kp::TimingOptions& timing, kernels::Communicator* sync) {
  const std::size_t n = c.blocks.size();
  double fwd_s = 0, bwd_s = 0;
  auto pass = [&] {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < n; ++i) c.blocks[i]->forward(c.x[i + 1].data(), c.x[i].data(), c.acts[i]);
    const auto t1 = Clock::now();
    const float* dy = c.dy_top.data();
    for (std::size_t i = n; i-- > 0;) {
      float* dx = (i % 2 == 0 ? c.g0 : c.g1).data();
      c.blocks[i]->backward(dx, dy, c.acts[i]);
      dy = dx;  // the block below takes this gradient
    }
    const auto t2 = Clock::now();
    fwd_s += seconds_between(t0, t1);
    bwd_s += seconds_between(t1, t2);
  };
  for (int w = 0; w < std::max(1, timing.warmup); ++w) pass();
  fwd_s = bwd_s = 0;
  pass();
  const double one_s = kp::max_over_ranks(sync, fwd_s + bwd_s);
  const int runs = kp::runs_per_sample(timing, one_s);
  const int reps = kp::choose_reps(timing, one_s * runs);
  std::vector<double> fwd_us, bwd_us;
  for (int r = 0; r < reps; ++r) {
    if (sync) sync->barrier();
    fwd_s = bwd_s = 0;
    for (int k = 0; k < runs; ++k) pass();
    fwd_us.push_back(fwd_s * 1e6 / (runs * static_cast<double>(n)));
    bwd_us.push_back(bwd_s * 1e6 / (runs * static_cast<double>(n)));
  }
  return {kp::summarize_us(std::move(fwd_us)).median_us * 1e-6, kp::summarize_us(std::move(bwd_us)).median_us * 1e-6};
}

// `chain` blocks of `d` in one store, inputs and output gradient filled.
std::unique_ptr<Chain> build_chain(const ModelDims& d, int chain, const TpGroup& group) {
  auto c = std::make_unique<Chain>();
  for (int b = 0; b < chain; ++b)
    for (const auto& p : TransformerBlock<float>::param_specs(d, b)) c->store.add(p);
  c->store.finalize();
  c->store.init(1234);
  for (int b = 0; b < chain; ++b) c->blocks.push_back(std::make_unique<TransformerBlock<float>>(d, b, c->store, group));
  c->acts.resize(static_cast<std::size_t>(chain));
  const std::size_t local = d.local_rows() * d.hidden;
  c->x.assign(static_cast<std::size_t>(chain) + 1, std::vector<float>(local));
  kp::fill_check_pattern(c->x[0].data(), local, 7);
  c->dy_top.resize(local);
  kp::fill_check_pattern(c->dy_top.data(), local, 8);
  c->g0.resize(local);
  c->g1.resize(local);
  return c;
}

}  // namespace

std::vector<BlockBenchmarkRow> benchmark_blocks(const models::ModelSpec& spec, const BlockBenchmarkOptions& options,
                                                const std::function<void(int, int)>& progress,
                                                std::vector<std::string>* skipped) {
  struct Config {
    int tp;
    bool sp;
    std::int64_t mb;
  };
  std::vector<Config> configs;
  for (int tp : options.tp_degrees) {
    if (tp < 1) input_error("block benchmark: tp degree {} must be >= 1", tp);
    for (std::int64_t mb : options.micro_batches) {
      if (mb < 1) input_error("block benchmark: micro-batch {} must be >= 1", mb);
      configs.push_back({tp, false, mb});
      if (tp > 1 && (mb * spec.seq_len) % tp == 0) configs.push_back({tp, true, mb});
    }
  }
  const std::string signature = costmodel::block_signature(spec);
  std::vector<BlockBenchmarkRow> rows;
  int done = 0;
  for (const Config& cfg : configs) {
    const std::string shape = fmt::format("mb {}, tp {}{}", cfg.mb, cfg.tp, cfg.sp ? ", sp" : "");
    ModelDims dims = make_model_dims(spec, cfg.mb, cfg.tp, 0, cfg.sp, planner::Recompute::None);
    const double param_bytes = 4.0 * block_param_floats(dims);
    const int chain = static_cast<int>(std::clamp(kChainParamBytes / std::max(param_bytes, 1.0), 1.0, double(kChainMax)));
    const double bytes =
        chain * (2.0 * param_bytes + 4.0 * block_activation_floats(dims)) + 8.0 * dims.local_rows() * dims.hidden * (chain + 3);
    if (bytes > options.max_bytes) {
      if (skipped)
        skipped->push_back(fmt::format("block {} ({}): needs {:.1f} GiB, over the {:.1f} GiB limit", spec.name, shape,
                                       bytes / (1024.0 * 1024 * 1024), options.max_bytes / (1024.0 * 1024 * 1024)));
      if (progress) progress(++done, static_cast<int>(configs.size()));
      continue;
    }
    LocalStandInCommunicator stand_in(cfg.tp);
    const auto [fwd_s, bwd_s] =
        time_chain(*build_chain(dims, chain, TpGroup{cfg.tp > 1 ? &stand_in : nullptr, cfg.tp, 0, cfg.sp}),
                   options.timing, options.sync);
    BlockBenchmarkRow row;
    row.sample.block = signature;
    row.sample.tp = cfg.tp;
    row.sample.sequence_parallel = cfg.sp;
    row.sample.micro_batch = cfg.mb;
    row.sample.fwd_us = fwd_s * 1e6;
    row.sample.bwd_us = bwd_s * 1e6;
    kernels::Communicator* real = cfg.tp > 1 && options.tp_group ? options.tp_group(cfg.tp) : nullptr;
    if (real != nullptr) {
      STRATA_CHECK(real->size() == cfg.tp, "tp_group({}) returned a group of {}", cfg.tp, real->size());
      const ModelDims rd = make_model_dims(spec, cfg.mb, cfg.tp, real->rank(), cfg.sp, planner::Recompute::None);
      const auto [f2, b2] =
          time_chain(*build_chain(rd, chain, TpGroup{real, cfg.tp, real->rank(), cfg.sp}), options.timing, options.sync);
      row.sample.fwd_with_tp_us = f2 * 1e6;
      row.sample.bwd_with_tp_us = b2 * 1e6;
    }
    row.model = spec.name;
    row.shape = shape;
    rows.push_back(std::move(row));
    if (progress) progress(++done, static_cast<int>(configs.size()));
  }
  return rows;
}

}  // namespace strata::calibration
