// compare_report.h without a search: the report format chosen from --report and --format,
// the notes merged without repeats, and the command that reproduces the report in every
// format.
#include "report/compare_report.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "common/json_text.h"
#include "report/report_html.h"
#include "report/report_markdown.h"
#include "report/report_notes.h"
#include "tests/report/report_fixture.h"

namespace strata::report {
namespace {

TEST(CompareReportFormat, FollowsTheGivenFormatThenTheExtension) {
  struct Case {
    const char* path;
    const char* given;
    const char* format;
  };
  for (const Case& c : {Case{"-", "", "md"}, Case{"r.html", "", "html"}, Case{"r.HTM", "", "html"},
                        Case{"r.md", "", "md"}, Case{"r.Markdown", "", "md"}, Case{"r.json", "", "json"},
                        Case{"report", "", "html"}, Case{"r.txt", "", "html"}, Case{"-", "json", "json"},
                        Case{"r.txt", "md", "md"}, Case{"r.json", "json", "json"}}) {
    SCOPED_TRACE(std::string(c.path) + " / " + c.given);
    EXPECT_EQ(compare_report_format(c.path, c.given), c.format);
  }
}

TEST(CompareReportFormat, RefusesAFormatTheExtensionContradicts) {
  try {
    compare_report_format("x.md", "html");
    FAIL() << "no throw";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--report x.md names a Markdown file"), std::string::npos) << what;
    EXPECT_NE(what.find("--format md"), std::string::npos) << what;
  }
  EXPECT_THROW(compare_report_format("x.json", "md"), InputError);
  EXPECT_THROW(compare_report_format("x.html", "json"), InputError);
}

// The command as the CLI records it (shell words); each format shows it whole and
// unchanged to the reader: HTML escaped, Markdown in a fence its backticks cannot close.
TEST(CompareReproduce, EveryFormatShowsTheCommandLine) {
  ReportData d = testing::make_report();
  const std::string cmd = "strata compare --model tiny --strategies 'my <layouts> ```x```.yaml' --format md";
  d.command_line = cmd;
  const auto j = strata::parse_json(render_compare_report(d, "json"));
  EXPECT_EQ(j["command_line"], cmd);

  const std::string md = render_compare_report(d, "md");
  EXPECT_NE(md.find("\nReproduce this report:\n\n````sh\n" + cmd + "\n````\n"), std::string::npos) << md;

  const std::string html = render_compare_report(d, "html");
  EXPECT_NE(html.find("<h2>Reproduce this report</h2>\n<pre class=\"cmd\"><code>strata compare --model tiny "
                      "--strategies &#39;my &lt;layouts&gt; ```x```.yaml&#39; --format md</code></pre>"),
            std::string::npos)
      << html.substr(html.find("Reproduce") == std::string::npos ? 0 : html.find("Reproduce"), 300);

  // Without a command line (a report built by a program): no section, an empty JSON string.
  d.command_line.clear();
  EXPECT_EQ(render_compare_report(d, "md").find("Reproduce"), std::string::npos);
  EXPECT_EQ(render_compare_report(d, "html").find("Reproduce"), std::string::npos);
  EXPECT_EQ(strata::parse_json(render_compare_report(d, "json"))["command_line"], "");
}

TEST(ReportNotes, AppendsOnlyNotesNotThereYetInOrder) {
  std::vector<std::string> notes = {"a", "b"};
  append_new_notes(notes, {"b", "c", "a", "d", "c"});
  EXPECT_EQ(notes, (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST(ReportNotes, OnlyAnUncalibratedDeviceGetsTheTrustWarning) {
  costmodel::ClusterSpec c;
  c.device.name = "x100";
  ASSERT_EQ(provenance_notes(c).size(), 1u);
  EXPECT_NE(provenance_notes(c)[0].find("profile `x100` is datasheet-only"), std::string::npos);
  c.device.collective_table.emplace_back();
  EXPECT_TRUE(provenance_notes(c).empty());
}

// A committed CPU profile measured on one processor says so when validate runs on another;
// the same processor (other memory size, other load) says nothing.
TEST(ReportNotes, MeasuredTablesOfAnotherProcessorAreNamed) {
  costmodel::ClusterSpec c;
  c.name = "local-cpu";
  const std::string here = "Intel(R) Xeon(R) Processor (family 6 model 167), 2 logical CPUs, avx512, 23.4 GiB";
  EXPECT_EQ(other_processor_note(c, here), "") << "no measured tables";
  c.device.gemm_source.kind = "measured";
  c.device.gemm_source.fields["device"] =
      "AMD EPYC (family 26 model 2), 2 logical CPUs, avx512, caches L1d 48 KiB, 23.5 GiB";
  const std::string note = other_processor_note(c, here);
  EXPECT_NE(note.find("come from AMD EPYC (family 26 model 2), not this host (Intel(R) Xeon(R) Processor "
                      "(family 6 model 167))"),
            std::string::npos)
      << note;
  EXPECT_EQ(other_processor_note(c, "AMD EPYC (family 26 model 2), 2 logical CPUs, avx512, 31.0 GiB"), "");
}

TEST(ReportNotes, ShortNoteLeavesOutTheAsidesAndCutsLongOnes) {
  EXPECT_EQ(short_note("stack megatron-2021 (Megatron-LM v2.x (v2.5 tag), SC21): attention unfused, fp16 "
                       "(`strata stacks` lists the sources)"),
            "stack megatron-2021: attention unfused, fp16");
  EXPECT_EQ(short_note("GEMM times: published table (as transcribed in ../shared/x.yaml)"), "GEMM times: published table");
  EXPECT_EQ(short_note("no asides here"), "no asides here");
  const std::string long_note(300, 'x');
  EXPECT_EQ(short_note(long_note).size(), kShortNoteChars);
  EXPECT_EQ(short_note(long_note).substr(kShortNoteChars - 3), "...");
  const std::string words = "word " + std::string(200, 'y');
  EXPECT_LE(short_note(words).size(), kShortNoteChars);
  EXPECT_EQ(short_note("unbalanced (aside"), "unbalanced (aside");  // kept as written
}

}  // namespace
}  // namespace strata::report
