// Recompute, never trust, as a property: random numbers written over a plan file's stored
// prediction, and over a device profile's rows, never reach an answer.
//  - A plan whose stored prediction was edited (negative, zero, huge, non-finite, 700% MFU,
//    scaled by any factor, text) is either refused by name or, once its prediction is
//    recomputed (what train and every consumer do), predicts exactly what the untouched
//    plan predicts.
//  - A device profile with a random number replaced is either refused by name or gives
//    finite, positive step times and an MFU no greater than 100% on every strategy tried.
// Both are seeded: a failure names the trial's edit and reproduces.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>

#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/device_profile.h"
#include "models/model_spec.h"
#include "planner/plan.h"
#include "planner/plan_recompute.h"
#include "planner/simulator.h"

namespace strata::planner {
namespace {

// Debug builds (the sanitizer preset) run a quarter of the trials: the simulator is ~20x slower there.
#ifdef NDEBUG
constexpr int kTrialDivisor = 1;
#else
constexpr int kTrialDivisor = 4;
#endif

// The values an adversarial edit writes.
std::string random_value(std::mt19937& rng, double original) {
  static const char* fixed[] = {"-1", "0", "1e308", "-1e308", ".nan", ".inf", "-.inf", "7.0", "abc", "''",
                                "[1, 2]", "{a: 1}", "1e-300", "99999999999999999999"};
  std::uniform_int_distribution<int> kind(0, 2);
  if (kind(rng) == 0 && std::isfinite(original)) {
    std::uniform_real_distribution<double> exponent(-4, 4);
    return fmt::format("{:.6g}", original * std::pow(10.0, exponent(rng)));
  }
  std::uniform_int_distribution<std::size_t> pick(0, std::size(fixed) - 1);
  return fixed[pick(rng)];
}

struct Number {
  std::size_t begin, end;  // the number's characters in the text
  double value;
};

// Every plain number in `text` between `from` and `to` (offsets), as YAML writes them.
std::vector<Number> numbers_in(const std::string& text, std::size_t from, std::size_t to) {
  static const std::regex number(R"((?:^|[\s:\[,])(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)(?=[\s,\]]|$))");
  std::vector<Number> out;
  const std::string part = text.substr(from, to - from);
  for (auto it = std::sregex_iterator(part.begin(), part.end(), number); it != std::sregex_iterator(); ++it) {
    const auto& m = (*it)[1];
    out.push_back({from + static_cast<std::size_t>(m.first - part.begin()),
                   from + static_cast<std::size_t>(m.second - part.begin()), std::stod(m.str())});
  }
  return out;
}

Plan planned(const std::string& model_name, const std::string& cluster_name, const Strategy& s) {
  Plan p;
  p.model = models::load_model(model_name);
  p.cluster = cluster_name;
  p.strategy = s;
  p.stage_layers = even_stage_layers(p.model, s.pp, s.vpp);
  SimulateOptions o;
  o.stage_layers = p.stage_layers;
  p.prediction = simulate(p.model, costmodel::load_cluster(cluster_name), s, o).prediction;
  return p;
}

TEST(StoredNumbersProperty, AnEditedStoredPredictionIsRefusedOrRecomputedToTheTruth) {
  // A layout dgx-a100's default stack (megatron-2021) runs: no SP, no ZeRO, full recompute.
  Strategy s{.dp = 2, .tp = 2, .pp = 2, .vpp = 1, .micro_batch = 2, .global_batch = 64, .zero = 0,
             .recompute = Recompute::Full, .sequence_parallel = false, .schedule = ScheduleKind::OneFOneB,
             .precision = {}};
  const Plan truth = planned("gpt2-124m", "dgx-a100", s);
  const std::string yaml = plan_to_yaml(truth);
  const std::size_t at = yaml.find("\nprediction:");
  ASSERT_NE(at, std::string::npos) << yaml;
  const std::vector<Number> stored = numbers_in(yaml, at, yaml.size());
  ASSERT_GE(stored.size(), 15u) << "the stored prediction's numbers";

  std::mt19937 rng(4242);
  int refused = 0, recomputed = 0;
  const int trials = 300 / kTrialDivisor;
  for (int trial = 0; trial < trials; ++trial) {
    std::string edited = yaml;
    std::string what;
    // One to three numbers replaced, from the last so earlier offsets stay valid.
    std::vector<std::size_t> picks;
    for (int k = std::uniform_int_distribution<int>(1, 3)(rng); k > 0; --k)
      picks.push_back(std::uniform_int_distribution<std::size_t>(0, stored.size() - 1)(rng));
    std::sort(picks.rbegin(), picks.rend());
    picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
    for (std::size_t i : picks) {
      const Number& n = stored[i];
      const std::string v = random_value(rng, n.value);
      what += fmt::format("[{} -> {}] ", yaml.substr(n.begin, n.end - n.begin), v);
      edited.replace(n.begin, n.end - n.begin, v);
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + what);
    Plan p;
    try {
      p = parse_plan_yaml(edited, "plan.yaml");
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("plan.yaml"), std::string::npos) << e.what();
      ++refused;
      continue;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an input error (the CLI would print `error: internal`): " << e.what();
      continue;
    }
    recompute_plan_prediction(p, "--plan plan.yaml");
    EXPECT_EQ(p.prediction.iteration_s, truth.prediction.iteration_s);
    EXPECT_EQ(p.prediction.peak_memory_gib, truth.prediction.peak_memory_gib);
    EXPECT_EQ(p.prediction.mfu, truth.prediction.mfu);
    EXPECT_EQ(p.prediction.stage_memory_gib, truth.prediction.stage_memory_gib);
    EXPECT_EQ(p.prediction.fits_memory, truth.prediction.fits_memory);
    ++recomputed;
  }
  // Both outcomes happen: the reader refuses what it can see is impossible, and accepts
  // plausible-looking stale numbers, which the recompute replaces.
  EXPECT_GT(refused, trials / 10);
  EXPECT_GT(recomputed, trials / 10);
}

// Random edits of `yaml` (one of its numbers before offset `end` each): `parse` refuses them naming "edited.yaml", or
// every strategy tried predicts finite positive times and memory, MFU <= 100% and executed
// FLOP/s within the device's peak.
template <typename Parse>
void edits_stay_physical(const std::string& yaml, std::size_t end, Parse parse, unsigned seed, int trials) {
  const std::vector<Number> stored = numbers_in(yaml, 0, end);
  ASSERT_GE(stored.size(), 10u) << "the file's numbers";
  const models::ModelSpec model = models::load_model("gpt2-124m");
  // Two nodes' worth of ranks in the second, so inter-node links carry traffic too.
  const std::vector<Strategy> strategies = {
      {.dp = 8, .tp = 1, .pp = 1, .vpp = 1, .micro_batch = 4, .global_batch = 64, .zero = 0,
       .recompute = Recompute::None, .sequence_parallel = false, .schedule = ScheduleKind::OneFOneB, .precision = {}},
      {.dp = 4, .tp = 2, .pp = 2, .vpp = 1, .micro_batch = 1, .global_batch = 32, .zero = 1,
       .recompute = Recompute::Full, .sequence_parallel = true, .schedule = ScheduleKind::OneFOneB, .precision = {}}};
  std::mt19937 rng(seed);
  trials /= kTrialDivisor;
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const Number& n = stored[std::uniform_int_distribution<std::size_t>(0, stored.size() - 1)(rng)];
    const std::string v = random_value(rng, n.value);
    std::string edited = yaml;
    edited.replace(n.begin, n.end - n.begin, v);
    const std::size_t line_begin = yaml.rfind('\n', n.begin) + 1;  // the line, for the message
    SCOPED_TRACE(fmt::format("trial {}: `{}` with {} -> {}", trial,
                             yaml.substr(line_begin, std::min<std::size_t>(yaml.find('\n', n.begin) - line_begin, 160)),
                             yaml.substr(n.begin, n.end - n.begin), v));
    costmodel::ClusterSpec cluster;
    try {
      cluster = parse(edited);
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("edited.yaml"), std::string::npos) << e.what();
      ++refused;
      continue;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an input error (the CLI would print `error: internal`): " << e.what();
      continue;
    }
    ++accepted;
    for (const Strategy& s : strategies) {
      Prediction q;
      try {
        q = simulate(model, cluster, s).prediction;
      } catch (const InputError&) {
        continue;  // refused by name (e.g. more GPUs than the edited cluster has): fine
      }
      EXPECT_TRUE(std::isfinite(q.iteration_s) && q.iteration_s > 0) << q.iteration_s;
      EXPECT_TRUE(std::isfinite(q.peak_memory_gib) && q.peak_memory_gib > 0) << q.peak_memory_gib;
      EXPECT_LE(q.mfu, 1.0) << "faster than the device's peak";
      EXPECT_LE(q.hardware_tflops_per_gpu * 1e12,
                cluster.device.peak_flops(costmodel::dtype_from_string(q.precision)) * (1 + 1e-9))
          << "executes more than the peak";
    }
  }
  EXPECT_GT(refused, trials / 12);
  EXPECT_GT(accepted, trials / 12);
}

TEST(StoredNumbersProperty, AnEditedDeviceProfileIsRefusedOrStaysPhysical) {
  const costmodel::ClusterSpec base = costmodel::load_cluster("dgx-h100");
  const std::string yaml = costmodel::to_yaml(base.device);
  edits_stay_physical(
      yaml, yaml.size(),
      [&](const std::string& text) {
        costmodel::ClusterSpec c = base;
        c.device = costmodel::parse_device_profile(text, "edited.yaml");
        return c;
      },
      1717, 250);
}

TEST(StoredNumbersProperty, AnEditedClusterIsRefusedOrStaysPhysical) {
  // The links, node counts and NCCL's SMs: the cluster's own numbers, before its device.
  const std::string yaml = costmodel::to_yaml(costmodel::load_cluster("dgx-h100"));
  edits_stay_physical(
      yaml, yaml.find("\ndevice:"),
      [](const std::string& text) { return costmodel::parse_cluster_spec(text, "edited.yaml"); }, 2929, 200);
}

}  // namespace
}  // namespace strata::planner
