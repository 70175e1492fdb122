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
    e.expect_keys({"dp", "tp", "pp", "vpp", "micro_batch", "global_batch", "zero", "recompute",
                   "sequence_parallel", "schedule", "rank_order"});
    planner::Strategy s;
    s.tp = static_cast<int>(e.get_int_in("tp", 1, 1 << 20, 1));
    s.pp = static_cast<int>(e.get_int_in("pp", 1, 1 << 20, 1));
    if (e.has("dp")) {
      s.dp = static_cast<int>(e.get_int_in("dp", 1, 1 << 24));
      if (static_cast<std::int64_t>(s.dp) * s.tp * s.pp != gpus)
        e.fail("dp", fmt::format("dp ({}) × tp ({}) × pp ({}) = {} must equal --gpus ({})", s.dp, s.tp, s.pp,
                                 static_cast<std::int64_t>(s.dp) * s.tp * s.pp, gpus));
    } else {
      if (gpus % (s.tp * s.pp) != 0)
        e.fail("tp", fmt::format("tp ({}) × pp ({}) = {} must divide --gpus ({})", s.tp, s.pp, s.tp * s.pp, gpus));
      s.dp = gpus / (s.tp * s.pp);
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
    out.push_back(s);
  }
  return out;
}

}  // namespace strata::report
