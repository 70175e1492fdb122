// The compare report's size bound as a property: for random strategy sets, what the Gantt
// charts add to the page stays within the bytes per timeline event the bound charges
// (200 B in HTML, 250 B in JSON, report/compare_report.cpp), so a page the bound accepts is
// never larger than it said; and a set over planner::kMaxTraceBytes is refused by name in
// well under a second, however large its global batch.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/trace_bounds.h"
#include "report/compare_report.h"

namespace strata::report {
namespace {

struct Inputs {
  models::ModelSpec model = models::load_model("gpt2-124m");
  costmodel::ClusterSpec cluster = costmodel::load_cluster("dgx-a100");
  costmodel::SoftwareStack stack = costmodel::load_software_stack("mcore-2024");
};

std::string render(const Inputs& s, const CompareOptions& o) {
  return render_compare_report(build_compare_report(s.model, s.cluster, s.stack, o, [](const std::string&) {}),
                               o.format);
}

TEST(ReportBoundsProperty, GanttBytesStayWithinWhatTheBoundCharges) {
  const Inputs inputs;
  std::mt19937 rng(5151);
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(v.size()) - 1)(rng));
  };
#ifdef NDEBUG
  const int trials = 60;
#else
  const int trials = 15;  // the sanitizer build simulates ~20x slower
#endif
  for (int trial = 0; trial < trials; ++trial) {
    std::string yaml = "strategies:\n";
    double events = 0;
    const int n = pick({1, 2, 3});
    for (int i = 0; i < n; ++i) {
      planner::Strategy s;
      s.tp = pick({1, 2});
      s.pp = pick({1, 2, 4});
      s.dp = 8 / (s.tp * s.pp);
      s.vpp = s.pp > 1 ? pick({1, 2, 3}) : 1;
      s.micro_batch = pick({1, 2});
      // Interleaving needs the micro-batches to be a multiple of pp.
      s.global_batch = s.micro_batch * s.dp * s.pp * pick({1, 4, 10, 20});
      s.schedule = s.vpp > 1 ? planner::ScheduleKind::Interleaved : planner::ScheduleKind::OneFOneB;
      yaml += fmt::format("  - {{tp: {}, pp: {}, dp: {}, vpp: {}, micro_batch: {}, global_batch: {}, schedule: {}}}\n",
                          s.tp, s.pp, s.dp, s.vpp, s.micro_batch, s.global_batch, planner::to_string(s.schedule));
      events += planner::trace_event_estimate(s);
    }
    for (const char* format : {"html", "json"}) {
      SCOPED_TRACE(fmt::format("trial {} ({}):\n{}", trial, format, yaml));
      CompareOptions o;
      o.cluster_name = "dgx-a100";
      o.gpus = 8;
      o.strategies_text = yaml;
      o.strategies_path = "s.yaml";
      o.format = format;
      o.gantt = "none";
      const std::size_t without = render(inputs, o).size();
      o.gantt = "all";
      const std::size_t with = render(inputs, o).size();
      const double per_event = std::string(format) == "html" ? 200 : 250;
      EXPECT_LE(static_cast<double>(with - without), per_event * events)
          << (with - without) / events << " bytes per estimated event";
    }
  }
}

TEST(ReportBoundsProperty, AnOversizedSetIsRefusedBeforeItIsSimulated) {
  const Inputs inputs;
  std::mt19937 rng(6262);
  for (int trial = 0; trial < 20; ++trial) {
    // 2^17 to 2^40 micro-batches per step: over the 200 MB bound from the first.
    const std::int64_t gb = std::int64_t{1} << std::uniform_int_distribution<int>(18, 40)(rng);
    CompareOptions o;
    o.cluster_name = "dgx-a100";
    o.gpus = 8;
    o.strategies_text = fmt::format("strategies:\n  - {{tp: 1, pp: 4, dp: 2, micro_batch: 1, global_batch: {}}}\n", gb);
    o.strategies_path = "s.yaml";
    o.gantt = "all";
    const auto start = std::chrono::steady_clock::now();
    try {
      render(inputs, o);
      ADD_FAILURE() << "global batch " << gb << " was accepted";
    } catch (const InputError& e) {
      // The Gantt bound, or the simulator's own limit on pipeline steps for the largest.
      const std::string what = e.what();
      EXPECT_TRUE(what.find("--gantt all") != std::string::npos ||
                  what.find("more than the simulator's limit") != std::string::npos)
          << what;
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0)
        << "global batch " << gb << ": refused only after simulating";
  }
}

}  // namespace
}  // namespace strata::report
