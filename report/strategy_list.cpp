#include "report/strategy_list.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/errors.h"
#include "common/yaml_reader.h"

namespace strata::report {

std::vector<planner::Strategy> parse_strategy_list(const std::string& yaml_text, const std::string& source,
                                                   int gpus, std::int64_t default_global_batch) {
  YamlReader root(parse_yaml(yaml_text, source), source);
  root.expect_map();
  root.expect_keys({"strategies"});
  const YamlReader list = root.child("strategies");
  list.expect_sequence();
  if (list.size() == 0) root.fail("strategies", "the list is empty (give at least one strategy)");
  std::vector<planner::Strategy> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YamlReader e = list.element(i);
    e.expect_map();
    e.expect_keys({"dp", "tp", "pp", "cp", "ep", "etp", "vpp", "micro_batch", "global_batch", "zero",
                   "recompute", "sequence_parallel", "schedule", "rank_order", "precision"});
    planner::Strategy s;
    s.tp = static_cast<int>(e.get_int_in("tp", 1, 1 << 20, 1));
    s.pp = static_cast<int>(e.get_int_in("pp", 1, 1 << 20, 1));
    s.cp = static_cast<int>(e.get_int_in("cp", 1, 1 << 20, 1));
    s.ep = static_cast<int>(e.get_int_in("ep", 1, 1 << 20, 1));
    s.etp = static_cast<int>(e.get_int_in("etp", 1, 1 << 20, 1));
    // tp x pp x cp below 2^60: each factor is at most 2^20.
    const std::int64_t model_parallel = static_cast<std::int64_t>(s.tp) * s.pp * s.cp;
    const std::string mp_text = s.cp > 1 ? fmt::format("tp ({}) × pp ({}) × cp ({})", s.tp, s.pp, s.cp)
                                         : fmt::format("tp ({}) × pp ({})", s.tp, s.pp);
    if (e.has("dp")) {
      s.dp = static_cast<int>(e.get_int_in("dp", 1, 1 << 24));
      if (s.dp * model_parallel != gpus)
        e.fail("dp", fmt::format("dp ({}) × {} = {} must equal --gpus ({})", s.dp, mp_text,
                                 s.dp * model_parallel, gpus));
    } else {
      if (gpus % model_parallel != 0)
        e.fail(s.cp > 1 ? "cp" : "tp",
               fmt::format("{} = {} must divide --gpus ({})", mp_text, model_parallel, gpus));
      s.dp = static_cast<int>(gpus / model_parallel);
    }
    s.vpp = static_cast<int>(e.get_int_in("vpp", 1, 1 << 16, 1));
    s.micro_batch = e.get_int_in("micro_batch", 1, std::int64_t{1} << 40, 1);
    if (e.has("global_batch")) {
      s.global_batch = e.get_int_in("global_batch", 1, std::int64_t{1} << 40);
    } else {
      s.global_batch = std::max<std::int64_t>(default_global_batch, 0);
    }
    s.zero = static_cast<int>(e.get_int_in("zero", 0, 3, 0));
    const auto rc = e.get_enum("recompute", {"none", "selective", "full"}, "none");
    s.recompute = rc == "full"        ? planner::Recompute::Full
                  : rc == "selective" ? planner::Recompute::Selective
                                      : planner::Recompute::None;
    s.sequence_parallel = e.get_bool("sequence_parallel", false);
    const auto sc = e.get_enum("schedule", {"gpipe", "1f1b", "interleaved"}, s.vpp > 1 ? "interleaved" : "1f1b");
    s.schedule = sc == "gpipe"         ? planner::ScheduleKind::GPipe
                 : sc == "interleaved" ? planner::ScheduleKind::Interleaved
                                       : planner::ScheduleKind::OneFOneB;
    s.rank_order = e.get_string("rank_order", s.rank_order);
    if (e.has("precision")) s.precision = e.get_enum("precision", {"bf16", "fp16", "fp8"});
    out.push_back(s);
  }
  return out;
}

std::string join_violations(const std::vector<planner::Violation>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "; " : "") + v[i].message;
  return out;
}

}  // namespace strata::report
