// The strategies file of `strata compare --strategies FILE`:
//   strategies:
//     - {tp: 8, pp: 4, micro_batch: 1, vpp: 2, recompute: selective, sequence_parallel: true}
//     - {tp: 4, pp: 8, dp: 2}
//     - {tp: 1, pp: 1, ep: 8, etp: 1, zero: 1, precision: fp8}
//     - {tp: 2, cp: 2, pp: 2, sequence_parallel: true}
// Keys: every dimension the planner searches: dp, tp, pp, cp, ep, etp, vpp, micro_batch,
// global_batch, zero, recompute, sequence_parallel, schedule, rank_order, precision (unknown
// keys rejected). tp, pp, cp, ep, etp, vpp and micro_batch default to 1, dp to
// gpus / (tp·pp·cp), schedule to interleaved when vpp > 1 (else 1f1b), precision to the
// stack's (empty), global_batch to the caller's default (0: the caller fills it in).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/strategy.h"

namespace strata::report {

// InputError names `source:line`, the key path (strategies[2].tp) and what was expected;
// dp · tp · pp · cp must equal `gpus`. With `default_global_batch` <= 0 an entry without
// global_batch gets 0, for the caller to fill in (e.g. rounded to micro_batch · dp).
std::vector<planner::Strategy> parse_strategy_list(const std::string& yaml_text, const std::string& source,
                                                   int gpus, std::int64_t default_global_batch);

// planner::validate's messages joined with "; ", for one `error:` line.
std::string join_violations(const std::vector<planner::Violation>& v);

}  // namespace strata::report
