// The validate JSON that `strata compare --measured` reads back (report/report_json.h).
#include <gtest/gtest.h>

#include "report/report_json.h"
#include "validation/validate_report.h"

namespace strata::validation {
namespace {

using report::parse_measured_json;

TEST(MeasuredJson, ReadsWhatValidateWrites) {
  ValidateReport r;
  r.model = "tiny";
  r.cluster = "local-cpu";
  r.ranks = 2;
  r.steps = 10;
  r.warmup = 2;
  PlanRun a;
  a.name = "top 1";
  a.strategy.dp = 2;
  a.strategy.global_batch = 8;
  a.predicted_s = 0.02;
  a.status = "ok";
  a.measured_s = 0.025;
  PlanRun b = a;
  b.name = "baseline tp";
  b.strategy.dp = 1;
  b.strategy.tp = 2;
  b.status = "failed";
  b.exit_code = 1;
  b.error = "error: boom";
  r.runs = {a, b};
  r.summary = summarize(r.runs);
  const auto f = parse_measured_json(validate_json(r), "v.json");
  EXPECT_EQ(f.model, "tiny");
  EXPECT_EQ(f.ranks, 2);
  ASSERT_EQ(f.runs.size(), 2u);
  EXPECT_EQ(f.runs[0].strategy, a.strategy);
  EXPECT_EQ(f.runs[0].measured.status, "ok");
  EXPECT_DOUBLE_EQ(f.runs[0].measured.step_s, 0.025);
  EXPECT_EQ(f.runs[1].strategy, b.strategy);
  EXPECT_EQ(f.runs[1].measured.status, "failed");
  EXPECT_EQ(f.runs[1].measured.error, "error: boom");
}

}  // namespace
}  // namespace strata::validation
