// Time to train: token counts with suffixes, steps / days / GPU-hours / cost with the
// prediction's band, and where the plan, simulate and compare outputs show them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "report/format_json.h"
#include "report/format_table.h"
#include "report/report_json.h"
#include "report/report_markdown.h"
#include "report/time_to_train.h"
#include "tests/report/format_fixture.h"

namespace strata::report {
namespace {

TEST(ParseTokenCount, AcceptsSuffixesDecimalsAndExponents) {
  EXPECT_EQ(parse_token_count("15T"), 15'000'000'000'000);
  EXPECT_EQ(parse_token_count("300B"), 300'000'000'000);
  EXPECT_EQ(parse_token_count("300b"), 300'000'000'000);
  EXPECT_EQ(parse_token_count("2.5e12"), 2'500'000'000'000);
  EXPECT_EQ(parse_token_count("1.5M"), 1'500'000);
  EXPECT_EQ(parse_token_count("800k"), 800'000);
  EXPECT_EQ(parse_token_count("7e9"), 7'000'000'000);
  EXPECT_EQ(parse_token_count("2P"), 2'000'000'000'000'000);
  EXPECT_EQ(parse_token_count("123"), 123);
  EXPECT_EQ(parse_token_count(".5k"), 500);
}

TEST(ParseTokenCount, RefusesAnythingElse) {
  for (const char* bad : {"", "T", "15X", "-5T", "+5T", "0", "0.4", "nan", "inf", "1e19", "1e400",
                          "0x10", "15 T", " 15T", "1.2.3", "15TB", "e5"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse_token_count(bad), InputError);
  }
}

TEST(ParseFiniteNumber, RefusesNonFiniteAndText) {
  EXPECT_DOUBLE_EQ(parse_finite_number("2.5"), 2.5);
  EXPECT_DOUBLE_EQ(parse_finite_number("-2"), -2);
  for (const char* bad : {"", "inf", "nan", "1e999", "two", "2$"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse_finite_number(bad), InputError);
  }
}

planner::Strategy strategy(std::int64_t global_batch, int dp, int tp, int pp) {
  return {.dp = dp, .tp = tp, .pp = pp, .global_batch = global_batch, .precision = {}};
}

TEST(TimeToTrain, StepsRoundUpAndTimeScalesWithGoodputAndGpus) {
  const planner::Strategy s = strategy(1024, 16, 8, 2);  // 256 GPUs
  planner::Prediction p;
  p.iteration_s = 10.0;
  TrainingTarget t;
  t.tokens = std::int64_t{1024} * 8192 * 1000 + 1;  // one token more than 1000 steps
  t.goodput = 0.8;
  t.gpu_hour_price = 2.0;
  const TimeToTrain r = time_to_train(s, p, 8192, t);
  EXPECT_EQ(r.tokens_per_step, 1024 * 8192);
  EXPECT_EQ(r.steps, 1001);
  EXPECT_EQ(r.gpus, 256);
  EXPECT_FALSE(r.banded);
  EXPECT_DOUBLE_EQ(r.wall_s.value, 1001 * 10.0 / 0.8);
  EXPECT_DOUBLE_EQ(r.days.value, r.wall_s.value / 86400);
  EXPECT_DOUBLE_EQ(r.gpu_hours.value, r.wall_s.value * 256 / 3600);
  EXPECT_DOUBLE_EQ(r.cost_usd.value, r.gpu_hours.value * 2.0);
  // No band: the range is the point.
  EXPECT_DOUBLE_EQ(r.days.low, r.days.value);
  EXPECT_DOUBLE_EQ(r.days.high, r.days.value);

  // Exactly 1000 steps of tokens: no extra step.
  t.tokens = std::int64_t{1024} * 8192 * 1000;
  EXPECT_EQ(time_to_train(s, p, 8192, t).steps, 1000);
}

TEST(TimeToTrain, RangeComesFromTheUncertaintyBand) {
  const planner::Strategy s = strategy(512, 8, 1, 1);
  planner::Prediction p;
  p.iteration_s = 2.0;
  p.uncertainty = 0.15;
  p.uncertainty_low = 0.9;
  p.uncertainty_high = 1.25;
  TrainingTarget t;
  t.tokens = 512 * 4096 * 100;
  t.gpu_hour_price = 3.0;
  const TimeToTrain r = time_to_train(s, p, 4096, t);
  EXPECT_TRUE(r.banded);
  EXPECT_DOUBLE_EQ(r.wall_s.value, 200.0);
  EXPECT_DOUBLE_EQ(r.wall_s.low, 180.0);
  EXPECT_DOUBLE_EQ(r.wall_s.high, 250.0);
  EXPECT_DOUBLE_EQ(r.gpu_hours.low, 180.0 * 8 / 3600);
  EXPECT_DOUBLE_EQ(r.cost_usd.high, 250.0 * 8 / 3600 * 3.0);

  const auto j = time_to_train_json(r);
  EXPECT_EQ(j["steps"], 100);
  EXPECT_EQ(j["tokens"], 512 * 4096 * 100);
  EXPECT_EQ(j["banded"], true);
  EXPECT_DOUBLE_EQ(j["wall_days"]["low"].get<double>(), 180.0 / 86400);
  EXPECT_DOUBLE_EQ(j["cost_usd"]["high"].get<double>(), 250.0 * 8 / 3600 * 3.0);
  EXPECT_DOUBLE_EQ(j["gpu_hour_price_usd"].get<double>(), 3.0);

  t.gpu_hour_price = 0;  // no price: no cost
  const auto k = time_to_train_json(time_to_train(s, p, 4096, t));
  EXPECT_TRUE(k["cost_usd"].is_null());
  EXPECT_TRUE(k["gpu_hour_price_usd"].is_null());
}

TEST(TimeToTrain, DescribedWithUnitsAndRange) {
  EXPECT_EQ(format_duration_days(12.34), "12.3 days");
  EXPECT_EQ(format_duration_days(0.25), "6 h");
  EXPECT_EQ(format_usd(151234), "$151k");
  EXPECT_EQ(format_gpu_hours(75600), "75.6k");
  EXPECT_EQ(format_token_count(15'000'000'000'000), "15T");
  EXPECT_EQ(format_token_count(300'000'000'000), "300B");
  EXPECT_EQ(format_ranged_days({12.34, 11.8, 14.1}, true), "12.3 days (11.8 - 14.1)");
  EXPECT_EQ(format_ranged_days({12.34, 11.8, 14.1}, false), "12.3 days");
}

TEST(TimeToTrain, PlanTableJsonAndSimulationShowIt) {
  PlanReport r = testing::make_report();
  EXPECT_EQ(format_plan_table(r).find("days"), std::string::npos);  // not asked: not shown
  EXPECT_EQ(format_plan_json(r).find("time_to_train"), std::string::npos);

  r.target.tokens = 15'000'000'000'000;
  r.target.gpu_hour_price = 2;
  const std::string table = format_plan_table(r);
  EXPECT_NE(table.find("days"), std::string::npos) << table;
  EXPECT_NE(table.find("GPU-hours"), std::string::npos) << table;
  EXPECT_NE(table.find("cost"), std::string::npos) << table;
  EXPECT_NE(table.find("# time to train #1: 15T tokens"), std::string::npos) << table;

  const auto j = nlohmann::json::parse(format_plan_json(r));
  ASSERT_EQ(j["plans"].size(), 2u);
  const std::int64_t per_step = 64 * r.plans[0].model.seq_len;
  for (const auto& p : j["plans"]) {
    ASSERT_TRUE(p.contains("time_to_train")) << p.dump();
    EXPECT_EQ(p["time_to_train"]["steps"], (15'000'000'000'000 + per_step - 1) / per_step);
  }
  // #2 is 1.25x slower per step: 1.25x the days.
  EXPECT_NEAR(j["plans"][1]["time_to_train"]["wall_days"]["value"].get<double>() /
                  j["plans"][0]["time_to_train"]["wall_days"]["value"].get<double>(),
              1.25, 1e-12);

  PlanReport sim = testing::make_report();
  sim.command = "simulate";
  sim.plans.resize(1);
  sim.target.tokens = 1'000'000'000;
  const std::string st = format_simulation_table(sim);
  EXPECT_NE(st.find("time to train"), std::string::npos) << st;
  EXPECT_NE(st.find("train steps (1B tokens)"), std::string::npos) << st;
  EXPECT_EQ(st.find("cost"), std::string::npos) << st;  // no price given
  const auto sj = nlohmann::json::parse(format_simulation_json(sim));
  EXPECT_EQ(sj["time_to_train"]["steps"], (1'000'000'000 + per_step - 1) / per_step);
}

// The plans of the plan-report fixture as compare's data (8 GPUs, no timelines).
ReportData compare_data(const PlanReport& pr) {
  ReportData d;
  d.model = pr.model;
  d.cluster = pr.cluster;
  d.gpus = 8;
  d.seq_len = pr.plans[0].model.seq_len;
  for (const auto& p : pr.plans) {
    ReportEntry e;
    e.strategy = p.strategy;
    e.prediction = p.prediction;
    d.entries.push_back(e);
  }
  return d;
}

TEST(TimeToTrain, CompareMarkdownAndJsonShowItPerStrategy) {
  ReportData d = compare_data(testing::make_report());
  EXPECT_EQ(report_markdown(d).find("GPU-hours"), std::string::npos);
  d.target.tokens = 2'000'000'000;
  d.target.gpu_hour_price = 1.5;
  const std::string md = report_markdown(d);
  EXPECT_NE(md.find("| days | GPU-hours | cost |"), std::string::npos) << md;
  EXPECT_NE(md.find("Time to train (★): 2B tokens"), std::string::npos) << md;
  const auto j = nlohmann::json::parse(report_json(d));
  for (const auto& e : j["strategies"]) {
    ASSERT_TRUE(e.contains("time_to_train")) << e.dump();
    EXPECT_GT(e["time_to_train"]["cost_usd"]["value"].get<double>(), 0);
  }
}

}  // namespace
}  // namespace strata::report

namespace strata::report {
namespace {

// Tables show the likely range beside the point value where a band exists, and rank by
// the point value.
TEST(LikelyRange, PlanTableShowsItBesideTheStepTime) {
  PlanReport r = testing::make_report();
  EXPECT_EQ(format_plan_table(r).find("likely range"), std::string::npos);  // no band, no column
  for (auto& p : r.plans) {
    p.prediction.uncertainty = 0.1;
    p.prediction.uncertainty_low = 0.9;
    p.prediction.uncertainty_high = 1.2;
  }
  r.plans[1].prediction.uncertainty = -1;  // one plan without a band: "-"
  const std::string t = format_plan_table(r);
  const auto header = t.find("likely range  TFLOP/s/GPU");
  ASSERT_NE(header, std::string::npos) << t;
  EXPECT_NE(t.find("1.000 s  0.900-1.200 s"), std::string::npos) << t;  // #1: 1 s x [0.9, 1.2]
  EXPECT_NE(t.find("1.250 s              -  "), std::string::npos) << t;  // no band: "-"
  EXPECT_EQ(range_cell(0.0123, 0.0456), "12.3-45.6 ms");
}

TEST(LikelyRange, CompareMarkdownShowsItBesideTheStepTime) {
  ReportData d = compare_data(testing::make_report());
  EXPECT_EQ(report_markdown(d).find("| likely range |"), std::string::npos);
  d.entries[0].prediction.uncertainty = 0.1;
  d.entries[0].prediction.uncertainty_low = 0.9;
  d.entries[0].prediction.uncertainty_high = 1.2;
  const std::string md = report_markdown(d);
  EXPECT_NE(md.find("| step time | likely range |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 s | 900 ms – 1.2 s |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.25 s | – |"), std::string::npos) << md;
}

}  // namespace
}  // namespace strata::report
