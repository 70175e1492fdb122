// Every dimension visible and comparable: the strategies file takes every dimension the
// planner searches, and compare's Markdown, HTML and JSON name a layout by all of its
// non-trivial dimensions and show the all-to-all and CP communication as their own parts.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "report/compare_report.h"
#include "report/report_html.h"
#include "report/report_json.h"
#include "report/report_markdown.h"
#include "report/strategy_list.h"
#include "tests/report/report_fixture.h"

namespace strata::report {
namespace {

TEST(StrategyListDimensions, TakesCpEpEtpZeroAndPrecision) {
  const auto s = parse_strategy_list(
      "strategies:\n"
      "  - {ep: 8, zero: 1}\n"
      "  - {tp: 2, ep: 4, etp: 2, sequence_parallel: true, precision: fp8}\n"
      "  - {tp: 2, cp: 2, pp: 2}\n"
      "  - {tp: 2, cp: 4, dp: 8}\n",
      "s.yaml", 64, 256);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].ep, 8);
  EXPECT_EQ(s[0].etp, 1);
  EXPECT_EQ(s[0].dp, 64);
  EXPECT_EQ(s[0].zero, 1);
  EXPECT_TRUE(s[0].precision.empty());  // the stack's
  EXPECT_EQ(s[1].ep, 4);
  EXPECT_EQ(s[1].etp, 2);
  EXPECT_EQ(s[1].dp, 32);
  EXPECT_EQ(s[1].precision, "fp8");
  EXPECT_EQ(s[2].cp, 2);
  EXPECT_EQ(s[2].dp, 8);  // 64 / (tp 2 x pp 2 x cp 2)
  EXPECT_EQ(s[3].gpus(), 64);
}

std::string list_error(const std::string& yaml, int gpus) {
  try {
    parse_strategy_list(yaml, "s.yaml", gpus, 64);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(StrategyListDimensions, NamesTheBadDimension) {
  // dp x tp x pp x cp must equal the GPUs, and cp counts.
  std::string e = list_error("strategies:\n  - {tp: 2, cp: 2, dp: 8}\n", 64);
  EXPECT_NE(e.find("cp (2)"), std::string::npos) << e;
  EXPECT_NE(e.find("--gpus (64)"), std::string::npos) << e;
  e = list_error("strategies:\n  - {tp: 4, cp: 4, pp: 8}\n", 64);  // 128 does not divide 64
  EXPECT_NE(e.find("strategies[0].cp"), std::string::npos) << e;
  e = list_error("strategies:\n  - {ep: 0}\n", 64);
  EXPECT_NE(e.find("ep"), std::string::npos) << e;
  e = list_error("strategies:\n  - {etp: many}\n", 64);
  EXPECT_NE(e.find("etp"), std::string::npos) << e;
  e = list_error("strategies:\n  - {precision: fp4}\n", 64);
  EXPECT_NE(e.find("precision"), std::string::npos) << e;
  EXPECT_NE(e.find("fp4"), std::string::npos) << e;
  e = list_error("strategies:\n  - {experts: 8}\n", 64);
  EXPECT_NE(e.find("experts"), std::string::npos) << e;
}

// Two MoE layouts of 64 GPUs with the all-to-all in their breakdown, and a CP one.
ReportData dimensions_report() {
  ReportData d = testing::make_report();
  d.gpus = 64;
  d.entries.resize(1);
  ReportEntry ep8 = testing::make_entry(1, 1, 64, 1.0, 50, true);
  ep8.strategy.ep = 8;
  ep8.prediction.breakdown_s.ep_comm = 0.2;
  ep8.prediction.breakdown_s.compute -= 0.2;
  ReportEntry etp = testing::make_entry(2, 1, 32, 1.1, 50, true);
  etp.strategy.ep = 4;
  etp.strategy.etp = 2;
  etp.strategy.precision = "fp8";
  etp.prediction.breakdown_s.ep_comm = 0.15;
  etp.prediction.breakdown_s.compute -= 0.15;
  ReportEntry cp = testing::make_entry(2, 2, 8, 1.3, 50, true);
  cp.strategy.cp = 2;
  cp.prediction.breakdown_s.cp_comm = 0.05;
  cp.prediction.breakdown_s.compute -= 0.05;
  d.entries = {ep8, etp, cp};
  return d;
}

TEST(CompareDimensions, LabelsNameEveryNonTrivialDimension) {
  const ReportData d = dimensions_report();
  EXPECT_EQ(strategy_label(d.entries[0].strategy), "tp1 pp1 dp64 ep8 · mbs 1");
  EXPECT_EQ(strategy_label(d.entries[1].strategy), "tp2 pp1 dp32 ep4 etp2 · mbs 1 · fp8");
  EXPECT_EQ(strategy_label(d.entries[2].strategy), "tp2 pp2 dp8 cp2 · mbs 1 · 1f1b");

  const std::string md = report_markdown(d);
  EXPECT_NE(md.find("| # | tp | pp | dp | cp | ep | etp |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 ★ | 1 | 1 | 64 | 1 | 8 | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| precision |"), std::string::npos) << md;
  EXPECT_NE(md.find("| CP comm |"), std::string::npos) << md;
  EXPECT_NE(md.find("| EP comm (all-to-all) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 200 ms |"), std::string::npos) << md;  // ep8's all-to-all

  const std::string html = report_html(d);
  EXPECT_NE(html.find("<th>ep</th><th>etp</th>"), std::string::npos);
  EXPECT_NE(html.find("title=\"tp1 pp1 dp64 ep8 · mbs 1\""), std::string::npos);
  EXPECT_NE(html.find("#1 tp1 pp1 dp64 ep8 mbs1"), std::string::npos);  // chart labels
  EXPECT_NE(html.find("#2 tp2 pp1 dp32 ep4 etp2 mbs1 fp8"), std::string::npos);
  EXPECT_EQ(html.find("tp1 pp1 dp64 mbs"), std::string::npos) << "an ep8 layout drawn as plain dp64";

  const auto j = nlohmann::json::parse(report_json(d));
  const auto& s0 = j["strategies"][0];
  EXPECT_EQ(s0["label"], "tp1 pp1 dp64 ep8 · mbs 1");
  EXPECT_EQ(s0["strategy"]["ep"], 8);
  EXPECT_EQ(s0["strategy"]["etp"], 1);
  EXPECT_EQ(j["strategies"][1]["strategy"]["etp"], 2);
  EXPECT_EQ(j["strategies"][2]["strategy"]["cp"], 2);
  EXPECT_DOUBLE_EQ(s0["prediction"]["breakdown_s"]["ep_comm"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(j["strategies"][2]["prediction"]["breakdown_s"]["cp_comm"].get<double>(), 0.05);
  // The strategy read back from the JSON is the one compared (validate files carry it).
  EXPECT_EQ(strategy_from_json(s0["strategy"], "x"), d.entries[0].strategy);
  EXPECT_EQ(strategy_from_json(j["strategies"][1]["strategy"], "x"), d.entries[1].strategy);
}

TEST(CompareDimensions, BreakdownChartDrawsAllToAllAndCpAsTheirOwnSegments) {
  const ReportData d = dimensions_report();
  const auto c = breakdown_chart(d);
  std::vector<std::string> names;
  for (const auto& s : c.series) names.push_back(s.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "EP comm (all-to-all)"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "CP comm"), names.end());
  // Every part is attributed: no "other" segment.
  EXPECT_EQ(std::find(names.begin(), names.end(), "other"), names.end());
  const auto ep = static_cast<std::size_t>(
      std::find(names.begin(), names.end(), "EP comm (all-to-all)") - names.begin());
  EXPECT_NEAR(c.rows[0].values[ep], 0.2, 1e-12);  // seconds (iterations >= 1 s)
  double sum = 0;
  for (double v : c.rows[0].values) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-9);

  // Without MoE or CP entries the chart keeps its six parts.
  EXPECT_EQ(breakdown_chart(testing::make_report()).series.size(), 6u);
}

TEST(CompareDimensions, HtmlShowsTheLikelyRangeBesideTheStepTime) {
  ReportData d = dimensions_report();
  EXPECT_EQ(report_html(d).find("likely"), std::string::npos);  // no band: no column
  d.entries[0].prediction.uncertainty = 0.1;
  d.entries[0].prediction.uncertainty_low = 0.9;
  d.entries[0].prediction.uncertainty_high = 1.2;
  const std::string html = report_html(d);
  EXPECT_NE(html.find("<th>step time</th><th>likely range</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>1 s</td><td>900 ms – 1.2 s</td>"), std::string::npos);
  EXPECT_NE(html.find("(likely 900 ms – 1.2 s) per iteration"), std::string::npos);
}

// The simulated timelines of real layouts (not hand-made data): an ep 2 layout of a MoE
// model has an all-to-all lane, a cp 2 layout a K/V-exchange lane, a dense one neither; each
// lane's events add up to the step's ep_comm / cp_comm in the breakdown (pp 1: the one
// stage is the critical one), and the page draws them as their own Gantt rows and legend
// entries.
TEST(CompareDimensions, GanttHasAllToAllAndCpLanesOfTheSimulatedSteps) {
  const costmodel::ClusterSpec cluster = costmodel::load_cluster("dgx-h100");
  const costmodel::SoftwareStack stack = costmodel::load_software_stack("mcore-2024");
  auto report_of = [&](const char* model, const std::string& strategies) {
    CompareOptions o;
    o.cluster_name = "dgx-h100";
    o.gpus = 2;
    o.gantt = "all";
    o.strategies_path = "s.yaml";
    o.strategies_text = "strategies:\n" + strategies;
    return build_compare_report(models::load_model(model), cluster, stack, o, [](const std::string&) {});
  };
  // The tiny MoE model's all-to-all; GPT-2's attention, long enough to leave part of the
  // K/V exchange exposed (the tiny models hide all of it).
  const ReportData moe = report_of("tiny-moe", "  - {ep: 2, global_batch: 8}\n");
  const ReportData gpt = report_of("gpt2-124m", "  - {cp: 2, global_batch: 8}\n  - {global_batch: 8}\n");
  ASSERT_EQ(moe.entries.size(), 1u);
  ASSERT_EQ(gpt.entries.size(), 2u);
  auto lane_s = [](const ReportEntry& e, const std::string& stream) {
    double sum = 0;
    for (const auto& ev : e.timeline) {
      if (ev.stream != stream) continue;
      EXPECT_GT(ev.end_s, ev.start_s) << stream << " " << ev.name;
      sum += ev.end_s - ev.start_s;
    }
    return sum;
  };
  const ReportEntry& ep = moe.entries[0];
  const ReportEntry& cp = gpt.entries[0];
  const ReportEntry& dense = gpt.entries[1];
  ASSERT_EQ(ep.strategy.ep, 2);
  ASSERT_EQ(cp.strategy.cp, 2);
  ASSERT_GT(ep.prediction.breakdown_s.ep_comm, 0);
  ASSERT_GT(cp.prediction.breakdown_s.cp_comm, 0);
  EXPECT_NEAR(lane_s(ep, "ep_comm"), ep.prediction.breakdown_s.ep_comm, 1e-9 * ep.prediction.iteration_s);
  EXPECT_NEAR(lane_s(cp, "cp_comm"), cp.prediction.breakdown_s.cp_comm, 1e-9 * cp.prediction.iteration_s);
  EXPECT_EQ(lane_s(ep, "cp_comm"), 0);
  EXPECT_EQ(lane_s(cp, "ep_comm"), 0);
  EXPECT_EQ(lane_s(dense, "ep_comm") + lane_s(dense, "cp_comm"), 0);
  // Each exchange lies inside the compute step it belongs to (same stage, micro-batch, chunk).
  for (const ReportEntry* e : {&ep, &cp})
    for (const auto& ev : e->timeline) {
      if (ev.stream != "ep_comm" && ev.stream != "cp_comm") continue;
      const char direction = ev.name.find(" F m") != std::string::npos ? 'F' : 'B';
      const auto owner = std::find_if(e->timeline.begin(), e->timeline.end(), [&](const planner::TimelineEvent& c) {
        return c.stream == "compute" && c.stage == ev.stage && c.microbatch == ev.microbatch && c.chunk == ev.chunk &&
               c.name[0] == direction;
      });
      ASSERT_NE(owner, e->timeline.end()) << ev.name;
      EXPECT_GE(ev.start_s, owner->start_s) << ev.name;
      EXPECT_LE(ev.end_s, owner->end_s) << ev.name;
    }

  const auto ep_chart = timeline_chart(ep, "ep");
  EXPECT_NE(std::find(ep_chart.rows.begin(), ep_chart.rows.end(), "stage 0 · ep_comm"), ep_chart.rows.end());
  EXPECT_EQ(ep_chart.rows[1], "stage 0 · ep_comm") << "right under the steps it is part of";
  std::vector<std::string> legend;
  for (const auto& s : ep_chart.legend) legend.push_back(s.name);
  EXPECT_NE(std::find(legend.begin(), legend.end(), "EP all-to-all (in the step)"), legend.end());
  EXPECT_EQ(std::find(legend.begin(), legend.end(), "other"), legend.end()) << "no lane drawn as other";
  const auto cp_chart = timeline_chart(cp, "cp");
  EXPECT_NE(std::find(cp_chart.rows.begin(), cp_chart.rows.end(), "stage 0 · cp_comm"), cp_chart.rows.end());
  legend.clear();
  for (const auto& s : cp_chart.legend) legend.push_back(s.name);
  EXPECT_NE(std::find(legend.begin(), legend.end(), "CP K/V exchange (in the step)"), legend.end());
  const auto dense_chart = timeline_chart(dense, "dense");
  for (const auto& r : dense_chart.rows) EXPECT_TRUE(r.find("ep_comm") == std::string::npos && r.find("cp_comm") == std::string::npos) << r;
}

}  // namespace
}  // namespace strata::report
