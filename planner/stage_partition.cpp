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
// Most splits optimal_cap tries below a feasible cap's costliest piece in one go.
constexpr int kMaxCapDescent = 8;

// Prefix sums: a piece [i, j) costs prefix[j] - prefix[i] (the same arithmetic everywhere,
// so feasibility never disagrees with itself by a rounding).
struct Prefix {
  std::vector<double> cost, memory;
  bool monotone = true;  // no item with a negative cost or memory (see pieces_within)
  explicit Prefix(const Items& it) : cost(it.cost.size() + 1, 0.0), memory(it.cost.size() + 1, 0.0) {
    for (std::size_t i = 0; i < it.cost.size(); ++i) {
      cost[i + 1] = cost[i] + it.cost[i];
      memory[i + 1] = memory[i] + it.memory[i];
      monotone = monotone && it.cost[i] >= 0 && it.memory[i] >= 0;
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
// as it is over. When they do, *largest is the costliest of those pieces (the greedy's
// pieces fit that cap too, so it is itself a feasible cap).
//
// Each piece's end is found by galloping (steps 1, 2, 4, ... then halving) when the prefix
// sums never decrease (every cost and memory >= 0): fits(i, j) is then monotone in j (a
// rounded difference is monotone in its first operand), so this finds the same end as
// stepping one item at a time, in O(log piece) tests instead of O(piece).
bool pieces_within(const Prefix& pre, double cap, double mem_cap, int stages, double* largest) {
  const std::size_t n = pre.size();
  const bool gallop = pre.monotone && n >= 4 * static_cast<std::size_t>(stages);  // pieces long enough to pay
  std::size_t i = 0;
  int pieces = 0;
  double most = 0;
  while (i < n) {
    std::size_t j = i;
    if (gallop) {
      std::size_t step = 1;  // invariant: fits(i, j) (or j == i), and j + step <= n is untested
      while (j + step <= n && pre.fits(i, j + step, cap, mem_cap)) j += step, step *= 2;
      for (; step > 1; step /= 2)
        if (j + step / 2 <= n && pre.fits(i, j + step / 2, cap, mem_cap)) j += step / 2;
    } else {
      while (j < n && pre.fits(i, j + 1, cap, mem_cap)) ++j;
    }
    if (j == i || ++pieces > stages) return false;
    most = std::max(most, pre.cost[j] - pre.cost[i]);
    i = j;
  }
  *largest = most;
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
//
// A bisection over the cap. With no negative cost or memory, feasibility is a step in the
// cap: feasible(cap) exactly when cap >= c*, the costliest piece of the best split (one of
// the pieces' rounded costs). So the bisection's answer depends only on c*, and every test
// it makes is answered without splitting once c* is known: a feasible split's costliest
// piece M is a feasible cap (c* <= M), and when the largest double below M is not feasible,
// c* = M. The search partitions tens of thousands of candidates: this takes a handful of
// splits instead of ~45 each, and returns the same cap to the last bit.
double optimal_cap(const Prefix& pre, const Items& it, int stages, double mem_cap) {
  double largest = 0;
  for (double c : it.cost) largest = std::max(largest, c);
  const double total = pre.cost.back();
  double feasible_from = std::numeric_limits<double>::infinity();     // known feasible: >= c*
  double infeasible_to = -std::numeric_limits<double>::infinity();    // known infeasible: < c*
  auto feasible = [&](double cap) {
    double most = 0;
    if (!pre.monotone) return pieces_within(pre, cap, mem_cap, stages, &most);  // no step to rely on
    if (cap >= feasible_from) return true;
    if (cap <= infeasible_to) return false;
    if (!pieces_within(pre, cap, mem_cap, stages, &most)) {
      infeasible_to = cap;
      return false;
    }
    feasible_from = most;
    // Walk down the greedy's costliest pieces (each a feasible cap below the last) until the
    // double below one is infeasible: that one is c*. A few steps bound the walk; the
    // bisection goes on with what they found.
    for (int step = 0; step < kMaxCapDescent; ++step) {
      const double below = std::nextafter(feasible_from, -std::numeric_limits<double>::infinity());
      if (below <= infeasible_to) break;
      if (!pieces_within(pre, below, mem_cap, stages, &most)) {
        infeasible_to = below;  // c* = feasible_from: every later test is answered
        break;
      }
      feasible_from = most;
    }
    return true;
  };
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
  // A split is kept only when its worst stage is below `best`, so the walk stops at the
  // first stage that reaches it (the search tries this for thousands of candidates).
  auto worst = [&](std::int64_t first, std::int64_t each, std::int64_t last, double best) {
    double w = 0;
    std::int64_t begin = 0;
    for (int c = 0; c < vpp; ++c)
      for (int p = 0; p < pp; ++p) {
        const std::int64_t blocks = (p == 0 ? first : p == pp - 1 ? last : each) / vpp;
        std::int64_t end = begin + blocks + (c == 0 && p == 0 ? 1 : 0);
        if (c == vpp - 1 && p == pp - 1) end = layers + 2;
        w = std::max(w, prefix[static_cast<std::size_t>(end)] - prefix[static_cast<std::size_t>(begin)]);
        if (w >= best) return w;
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
      // The first virtual stage (the embedding and first / vpp blocks) only grows with
      // `first`, the last one (last / vpp blocks and the head) only shrinks: past the first,
      // or before the last, reaching `best`, no split can be kept.
      if (prefix[static_cast<std::size_t>(first / vpp + 1)] >= best) break;
      if (prefix[static_cast<std::size_t>(layers + 2)] - prefix[static_cast<std::size_t>(layers + 1 - last / vpp)] >= best)
        continue;
      const double w = worst(first, each, last, best);
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
