#include "planner/stage_partition.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.h"
#include "planner/first_last_stages.h"

namespace strata::planner {
namespace {

// The groups folded into "items": item 0 = embedding + block 1, item L-1 = block L +
// head, so that every contiguous split of the items gives each stage >= 1 block.
struct Items {
  std::vector<double> cost;
  std::vector<double> memory;
};

Items fold_groups(const std::vector<double>& costs, const std::vector<double>& memory) {
  const std::size_t blocks = costs.size() - 2;
  Items it;
  it.cost.assign(costs.begin() + 1, costs.end() - 1);
  it.cost.front() += costs.front();
  it.cost.back() += costs.back();
  if (!memory.empty()) {
    it.memory.assign(memory.begin() + 1, memory.end() - 1);
    it.memory.front() += memory.front();
    it.memory.back() += memory.back();
  } else {
    it.memory.assign(blocks, 0.0);
  }
  return it;
}

constexpr int kInfeasible = std::numeric_limits<int>::max() / 2;

// Prefix sums: a piece [i, j) costs prefix[j] - prefix[i] (the same arithmetic everywhere,
// so feasibility never disagrees with itself by a rounding).
struct Prefix {
  std::vector<double> cost, memory;
  explicit Prefix(const Items& it) : cost(it.cost.size() + 1, 0.0), memory(it.cost.size() + 1, 0.0) {
    for (std::size_t i = 0; i < it.cost.size(); ++i) {
      cost[i + 1] = cost[i] + it.cost[i];
      memory[i + 1] = memory[i] + it.memory[i];
    }
  }
  std::size_t size() const { return cost.size() - 1; }
  bool fits(std::size_t i, std::size_t j, double cap, double mem_cap) const {
    return cost[j] - cost[i] <= cap && memory[j] - memory[i] <= mem_cap;
  }
};

// far[i]: largest j with [i, j) within both caps (i when even one item is too big);
// need[i]: fewest pieces covering [i, n) (greedy longest pieces are optimal because the
// constraints are monotone under interval inclusion).
struct Reach {
  std::vector<std::size_t> far;
  std::vector<int> need;
};

Reach reach(const Prefix& pre, double cap, double mem_cap) {
  const std::size_t n = pre.size();
  Reach r;
  r.far.assign(n + 1, n);
  r.need.assign(n + 1, 0);
  std::size_t j = 0;
  for (std::size_t i = 0; i < n; ++i) {
    j = std::max(j, i);
    while (j < n && pre.fits(i, j + 1, cap, mem_cap)) ++j;
    r.far[i] = j;
  }
  for (std::size_t i = n; i-- > 0;)
    r.need[i] = (r.far[i] > i && r.need[r.far[i]] < kInfeasible) ? 1 + r.need[r.far[i]] : kInfeasible;
  return r;
}

// Whether `stages` pieces within the caps cover every item: reach(pre, cap, mem_cap).need[0]
// <= stages, without the arrays: the greedy longest pieces from the front (need[] is that
// greedy's count, far[] the same largest piece: the caps are monotone), stopping as soon
// as it is over. The search partitions thousands of candidates, ~50 caps each.
bool pieces_within(const Prefix& pre, double cap, double mem_cap, int stages) {
  const std::size_t n = pre.size();
  std::size_t i = 0;
  int pieces = 0;
  while (i < n) {
    std::size_t j = i;
    while (j < n && pre.fits(i, j + 1, cap, mem_cap)) ++j;
    if (j == i || ++pieces > stages) return false;
    i = j;
  }
  return true;
}

// Splits the items into exactly `stages` pieces within the caps, choosing front to back
// the piece closest to an even share of the rest (ties: the lighter piece). Returns the
// end index (exclusive) of every piece.
std::vector<std::size_t> balanced_split(const Prefix& pre, int stages, double cap,
                                        double mem_cap) {
  const std::size_t n = pre.size();
  const Reach r = reach(pre, cap, mem_cap);
  STRATA_CHECK(r.need[0] <= stages, "stage partition: cap {} needs {} pieces > {}", cap,
               r.need[0], stages);
  std::vector<std::size_t> ends;
  std::size_t i = 0;
  for (int left = stages; left >= 1; --left) {
    const double target = (pre.cost[n] - pre.cost[i]) / left;
    std::size_t best = 0;
    double best_dev = std::numeric_limits<double>::infinity();
    for (std::size_t j = i + 1; j <= r.far[i]; ++j) {
      const std::size_t rest = n - j;
      const bool ok = left == 1 ? rest == 0
                                : (r.need[j] <= left - 1 && rest >= static_cast<std::size_t>(left - 1));
      if (!ok) continue;
      const double dev = std::abs((pre.cost[j] - pre.cost[i]) - target);
      if (dev < best_dev) {
        best_dev = dev;
        best = j;
      }
    }
    STRATA_CHECK(best > i, "no feasible piece at item {} with {} stages left", i, left);
    ends.push_back(best);
    i = best;
  }
  return ends;
}

// Smallest cap (within 1e-13 relative) for which `stages` pieces suffice, or +inf.
double optimal_cap(const Prefix& pre, const Items& it, int stages, double mem_cap) {
  double largest = 0;
  for (double c : it.cost) largest = std::max(largest, c);
  const double total = pre.cost.back();
  auto feasible = [&](double cap) { return pieces_within(pre, cap, mem_cap, stages); };
  double lo = std::max(largest, total / stages);
  if (feasible(lo)) return lo;
  double hi = lo + largest;
  if (!feasible(hi)) {
    hi = total;  // memory may force more pieces than cost alone would
    if (!feasible(hi)) return std::numeric_limits<double>::infinity();
  }
  // Invariant: lo infeasible, hi feasible.
  for (int iter = 0; iter < 200 && hi - lo > 1e-13 * hi; ++iter) {
    const double mid = 0.5 * (lo + hi);
    if (feasible(mid)) hi = mid; else lo = mid;
  }
  return hi;
}

void check_inputs(const std::vector<double>& costs, int stages) {
  if (costs.size() < 3)
    input_error("stage partition needs at least one transformer block (got {} layer groups)",
                costs.size());
  const auto blocks = static_cast<long long>(costs.size()) - 2;
  if (stages < 1 || stages > blocks)
    input_error("stage partition: virtual stages ({}) must be between 1 and the number of "
                "layers ({})", stages, blocks);
  for (std::size_t g = 0; g < costs.size(); ++g)
    if (!(costs[g] >= 0) || !std::isfinite(costs[g]))
      input_error("stage partition: cost of layer group {} ({}) must be finite and >= 0", g,
                  costs[g]);
}

}  // namespace

StagePartition StagePartition::balance(const std::vector<double>& group_costs, int stages) {
  return balance(group_costs, stages, {}, std::numeric_limits<double>::infinity());
}

StagePartition StagePartition::balance(const std::vector<double>& group_costs, int stages,
                                       const std::vector<double>& group_memory,
                                       double memory_cap) {
  check_inputs(group_costs, stages);
  if (!group_memory.empty() && group_memory.size() != group_costs.size())
    input_error("stage partition: {} memory entries for {} layer groups", group_memory.size(),
                group_costs.size());
  const Items items = fold_groups(group_costs, group_memory);

  const Prefix pre(items);
  double mem_cap = group_memory.empty() ? std::numeric_limits<double>::infinity() : memory_cap;
  double cap = optimal_cap(pre, items, stages, mem_cap);
  StagePartition p;
  if (!std::isfinite(cap)) {
    p.fits_memory_ = false;
    mem_cap = std::numeric_limits<double>::infinity();
    cap = optimal_cap(pre, items, stages, mem_cap);
  }
  const std::vector<std::size_t> ends = balanced_split(pre, stages, cap, mem_cap);

  const int blocks = static_cast<int>(group_costs.size()) - 2;
  std::size_t begin = 0;
  p.stages_.reserve(stages);
  for (std::size_t end : ends) {
    std::vector<int> groups;
    if (begin == 0) groups.push_back(0);
    for (std::size_t item = begin; item < end; ++item) groups.push_back(static_cast<int>(item) + 1);
    if (end == static_cast<std::size_t>(blocks)) groups.push_back(blocks + 1);
    double c = 0;
    for (int g : groups) c += group_costs[g];
    p.stage_costs_.push_back(c);
    p.max_cost_ = std::max(p.max_cost_, c);
    p.stages_.push_back(std::move(groups));
    begin = end;
  }
  return p;
}

StagePartition StagePartition::first_last(const std::vector<double>& group_costs, int pp, int vpp) {
  check_inputs(group_costs, std::max(1, pp) * std::max(1, vpp));
  StagePartition out;
  if (pp < 2 || vpp < 1) return out;
  const auto layers = static_cast<std::int64_t>(group_costs.size()) - 2;
  std::vector<double> prefix(group_costs.size() + 1, 0.0);  // prefix[g + 1]: groups 0..g
  for (std::size_t g = 0; g < group_costs.size(); ++g) prefix[g + 1] = prefix[g] + group_costs[g];
  // Virtual stage v = c * pp + p holds blocks(p) / vpp blocks, in the order of v; its groups
  // run from `begin` (the embedding, group 0, rides with v = 0) to `end` (the head, group
  // layers + 1, with the last). The split's worst stage, without building it:
  auto worst = [&](std::int64_t first, std::int64_t each, std::int64_t last) {
    double w = 0;
    std::int64_t begin = 0;
    for (int c = 0; c < vpp; ++c)
      for (int p = 0; p < pp; ++p) {
        const std::int64_t blocks = (p == 0 ? first : p == pp - 1 ? last : each) / vpp;
        std::int64_t end = begin + blocks + (c == 0 && p == 0 ? 1 : 0);
        if (c == vpp - 1 && p == pp - 1) end = layers + 2;
        w = std::max(w, prefix[static_cast<std::size_t>(end)] - prefix[static_cast<std::size_t>(begin)]);
        begin = end;
      }
    return w;
  };
  // Every pair (first, last) with both set covers the splits with one of them unset too (the
  // unset rank then holds the middle count). Middle ranks hold `each` blocks, a multiple of
  // vpp; with no middle ranks, first + last = layers.
  const int middle_ranks = pp - 2;
  const std::int64_t max_each = middle_ranks > 0 ? (layers - 2 * vpp) / middle_ranks : 0;
  double best = std::numeric_limits<double>::infinity();
  std::int64_t best_first = 0, best_last = 0;
  for (std::int64_t each = middle_ranks > 0 ? vpp : 0; each <= max_each; each += vpp) {
    const std::int64_t ends = layers - each * middle_ranks;  // first + last
    for (std::int64_t first = vpp; first + vpp <= ends; first += vpp) {
      const std::int64_t last = ends - first;
      if (last % vpp != 0) continue;
      const double w = worst(first, each, last);
      if (w < best) best = w, best_first = first, best_last = last;
    }
  }
  if (!std::isfinite(best)) return out;
  // Build the best one through Megatron-LM's own counting (first_last_stages.h).
  const std::vector<std::int64_t> blocks = first_last_stage_blocks(
      layers, pp, vpp, FirstLastStages{best_first, best_last}, "stage partition");
  std::size_t begin = 0;
  for (std::size_t v = 0; v < blocks.size(); ++v) {
    std::size_t end = begin + static_cast<std::size_t>(blocks[v]) + (v == 0 ? 1 : 0);
    if (v + 1 == blocks.size()) end = group_costs.size();
    std::vector<int> groups;
    for (std::size_t g = begin; g < end; ++g) groups.push_back(static_cast<int>(g));
    const double c = prefix[end] - prefix[begin];
    out.stage_costs_.push_back(c);
    out.max_cost_ = std::max(out.max_cost_, c);
    out.stages_.push_back(std::move(groups));
    begin = end;
  }
  return out;
}

double StagePartition::max_stage_cost(const std::vector<double>& group_costs,
                                      const std::vector<std::vector<int>>& stages) {
  double worst = 0;
  for (const auto& s : stages) {
    double c = 0;
    for (int g : s) c += group_costs.at(g);
    worst = std::max(worst, c);
  }
  return worst;
}

}  // namespace strata::planner
