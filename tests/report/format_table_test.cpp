#include "report/format_table.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "tests/report/format_fixture.h"
#include "tests/text_lines.h"

namespace strata::report {
namespace {

using strata::testing::lines_of;

TEST(Table, AlignsColumnsToTheWidestCell) {
  Table t({{"name", Align::Left}, {"n", Align::Right}});
  t.add_row({"a", "1"});
  t.add_row({"longer", "12345"});
  auto l = lines_of(t.render());
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0], "name        n");
  EXPECT_EQ(l[1], "------  -----");
  EXPECT_EQ(l[2], "a           1");
  EXPECT_EQ(l[3], "longer  12345");
}

TEST(Table, RejectsRowsWithTheWrongNumberOfCells) {
  Table t({{"a", Align::Left}, {"b", Align::Left}});
  EXPECT_THROW(t.add_row({"only one"}), InternalError);
}

TEST(FormatDuration, PicksAReadableUnit) {
  EXPECT_EQ(duration_cell(12.3456), "12.346 s");
  EXPECT_EQ(duration_cell(0.0852), "85.2 ms");
  EXPECT_EQ(duration_cell(0.00031), "310 us");
  EXPECT_EQ(percent_cell(0.3949), "39.5%");
  EXPECT_EQ(duration_cell(0.0), "0 s");
}

// The header's notes: by default the first note, every warning and datasheet caveats, and a
// count of the rest; --explain prints every note in full.
TEST(FormatPlanTable, ShortHeaderKeepsFirstNoteWarningsAndCountsTheRest) {
  auto r = testing::make_report();
  r.notes = {"stack s: attention cudnn", "compute dtype bf16", "GEMM times: datasheet roofline",
             "collectives: alpha-beta model", "warning: MFU above every published run", "memory: rules"};
  const std::string out = format_plan_table(r);
  for (const char* kept : {"# note: stack s: attention cudnn (3 more notes: kernel sources, collectives, memory "
                           "rules; --explain prints them)\n",
                           "# note: GEMM times: datasheet roofline", "# note: warning: MFU above every published run"})
    EXPECT_NE(out.find(kept), std::string::npos) << kept << "\n" << out;
  for (const char* held : {"compute dtype bf16", "alpha-beta", "memory: rules"})
    EXPECT_EQ(out.find(held), std::string::npos) << held;
  // Without warnings or datasheet numbers the header has one note line.
  r.notes = {"stack s: attention cudnn", "compute dtype bf16", "memory: rules"};
  const std::string quiet = format_plan_table(r);
  std::size_t note_lines = 0;
  for (std::size_t at = quiet.find("# note:"); at != std::string::npos; at = quiet.find("# note:", at + 1)) ++note_lines;
  EXPECT_EQ(note_lines, 1u) << quiet;
  r.explain = true;
  const std::string full = format_plan_table(r);
  for (const auto& n : r.notes) EXPECT_NE(full.find("# note: " + n), std::string::npos) << n;
  EXPECT_EQ(full.find("more note"), std::string::npos);
}

TEST(FormatPlanTable, HasHeaderRankedRowsAndTheReasonTheBestWon) {
  auto r = testing::make_report();
  std::string out = format_plan_table(r);
  auto l = lines_of(out);
  // Header names model, cluster, gpus, global batch, search statistics, defaults, notes.
  EXPECT_NE(out.find("model gpt2-124m on cluster dgx-a100"), std::string::npos) << out;
  EXPECT_NE(out.find("8 GPUs, global batch 64"), std::string::npos);
  EXPECT_NE(out.find("searched 120 candidates"), std::string::npos);
  EXPECT_NE(out.find("113 fit memory, 7 over memory, 30 rejected"), std::string::npos);
  EXPECT_NE(out.find("defaults used: cluster dgx-a100"), std::string::npos);
  EXPECT_NE(out.find("# note: profile `a100-sxm-80gb` is datasheet-only"), std::string::npos);
  // One row per plan, best first, with the columns the issue lists.
  std::vector<std::string> rows;
  for (const auto& x : l)
    if (!x.empty() && x[0] != '#' && x.find("rank") == std::string::npos && x[0] != '-')
      rows.push_back(x);
  ASSERT_EQ(rows.size(), 2u) << out;
  EXPECT_NE(rows[0].find("1.000 s"), std::string::npos) << rows[0];
  EXPECT_NE(rows[1].find("1.250 s"), std::string::npos) << rows[1];
  EXPECT_NE(rows[0].find("41.2/80"), std::string::npos) << rows[0];
  EXPECT_NE(rows[0].find("20.0%"), std::string::npos) << "bubble of #1";
  EXPECT_NE(rows[0].find("selective"), std::string::npos);
  EXPECT_NE(rows[0].find("1f1b"), std::string::npos);
  for (const char* col : {"tp", "pp", "dp", "vpp", "mbs", "zero", "recompute", "sp", "sched",
                          "step time", "TFLOP/s/GPU", "MFU", "mem/GPU", "bubble"})
    EXPECT_NE(out.find(col), std::string::npos) << col;
  // Why #1 won: 20% faster than #2, mostly bubble (0.2 s vs 0.45 s).
  std::string why = explain_best(r);
  EXPECT_NE(why.find("20.0% faster than #2"), std::string::npos) << why;
  EXPECT_NE(why.find("mostly bubble (200.0 ms vs 450.0 ms)"), std::string::npos) << why;
}

// A plan that fits with under 5% of the 80 GiB to spare (above 76 GiB) is marked tight, and
// one legend line says what that means; 76 GiB exactly is not tight, and no tight row means
// no legend.
TEST(FormatPlanTable, PlansWithLittleMemoryToSpareAreMarkedTight) {
  auto r = testing::make_report();
  std::string out = format_plan_table(r);
  EXPECT_EQ(out.find("tight"), std::string::npos) << out;
  r.plans[1].prediction.peak_memory_gib = 77.6;
  r.plans[0].prediction.peak_memory_gib = 76.0;
  out = format_plan_table(r);
  EXPECT_NE(out.find("77.6/80 tight"), std::string::npos) << out;
  EXPECT_EQ(out.find("76.0/80 tight"), std::string::npos) << out;
  EXPECT_NE(out.find("# tight: fits with under 5% of the GPU's memory to spare"), std::string::npos) << out;
}

TEST(FormatSimulationTable, ListsBreakdownSharesThatSumToTheStep) {
  auto r = testing::make_report();
  r.command = "simulate";
  r.plans.resize(1);
  std::string out = format_simulation_table(r);
  for (const char* s : {"step time", "1.000 s", "MFU", "39.5%", "compute", "700.0 ms", "70.0%",
                        "bubble", "200.0 ms", "stage 1 mem GiB", "tp=2 pp=2 dp=2"})
    EXPECT_NE(out.find(s), std::string::npos) << s << "\n" << out;
  EXPECT_EQ(out.find("does NOT fit"), std::string::npos);
  r.plans[0].prediction.fits_memory = false;
  EXPECT_NE(format_simulation_table(r).find("does NOT fit"), std::string::npos);
}

TEST(FormatSimulationTable, ANewlineInAModelNameStaysInsideTheHeaderComment) {
  auto r = testing::make_report();
  r.command = "simulate";
  r.plans.resize(1);
  r.model = "gpt\nstep time 0 s";
  const std::string out = format_simulation_table(r);
  EXPECT_NE(out.find("model gpt\\nstep time 0 s on cluster"), std::string::npos) << out;
  EXPECT_EQ(out.find("\nstep time 0 s"), std::string::npos) << out;
}

TEST(FormatModelsTable, OneRowPerModelWithParamsInBillions) {
  ModelRow row{models::load_model("gpt3-175b"), 174.6e9};
  std::string out = format_models_table({row});
  EXPECT_NE(out.find("gpt3-175b"), std::string::npos);
  EXPECT_NE(out.find("174.6"), std::string::npos);
  EXPECT_NE(out.find("12288"), std::string::npos);
  EXPECT_EQ(lines_of(out).size(), 3u);
}

}  // namespace
}  // namespace strata::report
