#include "kernels/profiler/gemm_problems.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "models/model_graph.h"

namespace strata::kernels::profiler {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

const char* short_name(models::OpKind k) {
  switch (k) {
    case models::OpKind::Qkv: return "qkv";
    case models::OpKind::OutProj: return "out_proj";
    case models::OpKind::MlpUp: return "mlp_up";
    case models::OpKind::MlpGate: return "mlp_gate";
    case models::OpKind::MlpDown: return "mlp_down";
    case models::OpKind::LmHead: return "lm_head";
    default: return "gemm";
  }
}

}  // namespace

bool GemmProblem::operator<(const GemmProblem& o) const {
  double f = static_cast<double>(m) * n * k, g = static_cast<double>(o.m) * o.n * o.k;
  return std::tie(f, m, n, k) < std::tie(g, o.m, o.n, o.k);
}

std::vector<int> usable_tp_degrees(const models::ModelGraph& graph, const std::vector<int>& tp_degrees) {
  const auto& spec = graph.spec();
  std::vector<int> out;
  for (int tp : tp_degrees)
    if (tp >= 1 && spec.heads % tp == 0 && spec.kv_heads % tp == 0 &&
        std::find(out.begin(), out.end(), tp) == out.end())
      out.push_back(tp);
  return out;
}

std::vector<GemmProblem> model_gemm_problems(const models::ModelGraph& graph,
                                             const std::vector<int>& tp_degrees) {
  std::vector<GemmProblem> out;
  const std::string& model = graph.spec().name;
  for (int tp : usable_tp_degrees(graph, tp_degrees)) {
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int>, bool> seen;
    for (std::size_t v = 0; v < graph.num_ops(); ++v) {
      const models::Op& op = graph.op(v);
      if (!models::is_gemm(op.kind) || op.gemm.m <= 0 || op.routed_expert) continue;
      std::int64_t m = op.gemm.m, n = op.gemm.n, k = op.gemm.k;
      switch (op.sharding) {
        case models::Sharding::ColumnParallel:
        case models::Sharding::VocabParallel:
        case models::Sharding::HeadParallel: n = ceil_div(n, tp); break;
        case models::Sharding::RowParallel: k = ceil_div(k, tp); break;
        case models::Sharding::Replicated: break;
      }
      // All blocks have the same shapes: keep the first op of each kind.
      if (seen[{m, n, k, static_cast<int>(op.kind)}]) continue;
      seen[{m, n, k, static_cast<int>(op.kind)}] = true;
      const char* name = short_name(op.kind);
      out.push_back({m, n, k, fmt::format("{} {} fwd tp{}", model, name, tp)});
      out.push_back({m, k, n, fmt::format("{} {} dgrad tp{}", model, name, tp)});
      out.push_back({k, n, m, fmt::format("{} {} wgrad tp{}", model, name, tp)});
    }
  }
  return out;
}

std::vector<GemmProblem> expert_gemm_problems(const models::ModelGraph& graph,
                                              const std::vector<int>& tp_degrees) {
  std::vector<GemmProblem> out;
  const auto& spec = graph.spec();
  if (!spec.moe) return out;
  const std::int64_t experts = spec.moe->experts;
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> seen;  // up and gate share shapes
  for (std::size_t v = 0; v < graph.num_ops(); ++v) {
    const models::Op& op = graph.op(v);
    if (!op.routed_expert || op.gemm.m <= 0) continue;
    const bool row = op.sharding == models::Sharding::RowParallel;
    for (int etp : tp_degrees) {
      const std::int64_t split = row ? op.gemm.k : op.gemm.n;
      if (etp < 1 || split % etp != 0) continue;
      const std::int64_t n = row ? op.gemm.n : op.gemm.n / etp, k = row ? op.gemm.k / etp : op.gemm.k;
      std::set<std::int64_t> ms;
      for (std::int64_t ep = 1; ep <= experts; ep *= 2)
        for (int tp : tp_degrees)
          if (tp >= 1) ms.insert(std::max<std::int64_t>(1, ceil_div(op.gemm.m * ep * etp, tp)));
      for (std::int64_t m : ms) {
        if (!seen.insert({m, n, k}).second) continue;
        const std::string at = fmt::format("{} expert {}x{} etp{}", spec.name, row ? "down" : "up", m, etp);
        out.push_back({m, n, k, at + " fwd"});
        out.push_back({m, k, n, at + " dgrad"});
        out.push_back({k, n, m, at + " wgrad"});
      }
    }
  }
  return out;
}

std::vector<GemmProblem> attention_gemm_problems(const models::ModelGraph& graph) {
  const auto& spec = graph.spec();
  const std::int64_t s = spec.seq_len, d = spec.head_dim();
  return {{s, s, d, fmt::format("{} attention qk", spec.name)},
          {s, d, s, fmt::format("{} attention av", spec.name)}};
}

std::vector<GemmProblem> square_gemm_problems(std::int64_t min_dim, std::int64_t max_dim) {
  std::vector<GemmProblem> out;
  for (std::int64_t d = std::max<std::int64_t>(1, min_dim); d <= max_dim; d *= 2)
    out.push_back({d, d, d, "square"});
  return out;
}

std::vector<GemmProblem> dedupe_gemm_problems(std::vector<GemmProblem> problems) {
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, GemmProblem> by_shape;
  for (auto& p : problems) {
    auto [it, inserted] = by_shape.try_emplace({p.m, p.n, p.k}, p);
    if (!inserted && it->second.origin.find(p.origin) == std::string::npos)
      it->second.origin += "; " + p.origin;
  }
  std::vector<GemmProblem> out;
  for (auto& [shape, p] : by_shape) out.push_back(std::move(p));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace strata::kernels::profiler
