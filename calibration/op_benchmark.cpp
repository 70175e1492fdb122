#include "calibration/op_benchmark.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "common/errors.h"
#include "kernels/profiler/gemm_check.h"
#include "costmodel/op_cost.h"
#include "models/model_graph.h"
#include "planner/strategy.h"
#include "runtime/activation.h"
#include "runtime/attention.h"
#include "runtime/norm.h"
#include "runtime/rope.h"
#include "runtime/vocab_parallel_cross_entropy.h"

namespace strata::calibration {

using namespace strata::runtime;

namespace {

namespace kp = strata::kernels::profiler;
using Clock = std::chrono::steady_clock;

std::vector<float> random_buffer(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  kp::fill_check_pattern(v.data(), n, seed);
  return v;
}

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Median seconds of `fn` under the profiler's timing policy: warm-up, then as many
// samples as fit the budget, each a burst of back-to-back runs when min_sample_s asks
// for it (the first run sizes both).
double median_seconds(const OpBenchmarkOptions& o, const std::function<void()>& fn) {
  for (int i = 0; i < o.timing.warmup; ++i) fn();
  const double one_s = seconds_of(fn);
  const int runs = kp::runs_per_sample(o.timing, one_s);
  const auto burst = [&] {
    for (int r = 0; r < runs; ++r) fn();
  };
  std::vector<double> us{runs == 1 ? one_s * 1e6 : seconds_of(burst) * 1e6 / runs};
  const int reps = kp::choose_reps(o.timing, one_s * runs);
  while (static_cast<int>(us.size()) < reps) us.push_back(seconds_of(burst) * 1e6 / runs);
  return kp::summarize_us(std::move(us)).median_us * 1e-6;
}

struct Shape {
  std::size_t B, S, C, N, Hl, KVl, D, Fl, Vl;
};

// Forward and backward seconds of one op kind at shape `s`.
std::pair<double, double> time_op(models::OpKind kind, const models::ModelSpec& spec, const Shape& s,
                                  const OpBenchmarkOptions& o) {
  using models::OpKind;
  const std::size_t NC = s.N * s.C;
  switch (kind) {
    case OpKind::Norm: {
      auto x = random_buffer(NC, 1), w = random_buffer(s.C, 2), b = random_buffer(s.C, 3);
      auto dy = random_buffer(NC, 4);
      std::vector<float> y(NC), mean(s.N), rstd(s.N), dx(NC), dw(s.C), db(s.C);
      const bool ln = spec.norm == models::Norm::LayerNorm;
      auto fwd = [&] {
        if (ln) layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), s.N, s.C);
        else rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), s.N, s.C);
      };
      const double f = median_seconds(o, fwd);
      const double bw = median_seconds(o, [&] {
        if (ln)
          layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), mean.data(), rstd.data(),
                             w.data(), s.N, s.C);
        else rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), rstd.data(), w.data(), s.N, s.C);
      });
      return {f, bw};
    }
    case OpKind::Residual: {
      auto a = random_buffer(NC, 5), b = random_buffer(NC, 6);
      std::vector<float> out(NC), copy(NC);
      // Forward: out = a + b. Backward: the gradient passes on both paths (two copies).
      const double f = median_seconds(o, [&] {
        for (std::size_t i = 0; i < NC; ++i) out[i] = a[i] + b[i];
      });
      const double bw = median_seconds(o, [&] {
        std::copy(a.begin(), a.end(), copy.begin());
        std::copy(copy.begin(), copy.end(), out.begin());
      });
      return {f, bw};
    }
    case OpKind::Activation: {
      const std::size_t n = s.N * s.Fl;
      auto h = random_buffer(n, 7), up = random_buffer(n, 8), dout = random_buffer(n, 9);
      std::vector<float> out(n), dh(n), dup(n);
      if (spec.activation == models::Activation::Gelu)
        return {median_seconds(o, [&] { gelu_forward(out.data(), h.data(), n); }),
                median_seconds(o, [&] { gelu_backward(dh.data(), h.data(), dout.data(), n); })};
      return {median_seconds(o, [&] { swiglu_forward(out.data(), h.data(), up.data(), n); }),
              median_seconds(o, [&] {
                swiglu_backward(dh.data(), dup.data(), h.data(), up.data(), dout.data(), n);
              })};
    }
    case OpKind::Rope: {
      auto q = random_buffer(s.B * s.Hl * s.S * s.D, 10), k = random_buffer(s.B * s.KVl * s.S * s.D, 11);
      auto fwd = [&] {
        rope_forward(q.data(), s.B * s.Hl, s.S, s.D);
        rope_forward(k.data(), s.B * s.KVl, s.S, s.D);
      };
      auto bwd = [&] {
        rope_backward(q.data(), s.B * s.Hl, s.S, s.D);
        rope_backward(k.data(), s.B * s.KVl, s.S, s.D);
      };
      return {median_seconds(o, fwd), median_seconds(o, bwd)};
    }
    case OpKind::AttentionCore: {
      AttentionShape as;
      as.batch = s.B, as.heads = s.Hl, as.kv_heads = s.KVl, as.seq = s.S, as.head_dim = s.D;
      auto qkv = random_buffer(s.N * as.qkv_width(), 12), dy = random_buffer(s.N * as.q_width(), 13);
      const std::size_t qn = s.B * s.Hl * s.S * s.D, kn = s.B * s.KVl * s.S * s.D;
      std::vector<float> q(qn), k(kn), v(kn), out(qn), y(s.N * as.q_width()), probs(s.B * s.Hl * s.S * s.S);
      std::vector<float> d_o(qn), dq(qn), dk(kn), dv(kn), dqkv(qkv.size());
      // As TransformerBlock runs it: split heads, attention (probabilities kept), merge.
      const double f = median_seconds(o, [&] {
        split_heads_forward(q.data(), k.data(), v.data(), qkv.data(), as);
        attention_forward(out.data(), probs.data(), q.data(), k.data(), v.data(), as);
        merge_heads_forward(y.data(), out.data(), as);
      });
      const double bw = median_seconds(o, [&] {
        merge_heads_backward(d_o.data(), dy.data(), as);
        attention_backward(dq.data(), dk.data(), dv.data(), d_o.data(), probs.data(), q.data(), k.data(),
                           v.data(), as);
        split_heads_backward(dqkv.data(), dq.data(), dk.data(), dv.data(), as);
      });
      return {f, bw};
    }
    case OpKind::Loss: {
      auto logits = random_buffer(s.N * s.Vl, 14);
      std::vector<float> losses(s.N), dlogits(logits.size());
      std::vector<std::int32_t> targets(s.N);
      for (std::size_t i = 0; i < s.N; ++i) targets[i] = static_cast<std::int32_t>((i * 7919) % s.Vl);
      const TpGroup one;
      const double f = median_seconds(o, [&] {
        vocab_parallel_cross_entropy_forward(one, logits.data(), losses.data(), targets.data(), s.N, s.Vl,
                                             std::int64_t{0});
      });
      const double bw = median_seconds(o, [&] {
        vocab_parallel_cross_entropy_backward(dlogits.data(), logits.data(), targets.data(), 1e-3f, s.N, s.Vl,
                                              std::int64_t{0});
      });
      return {f, bw};
    }
    default:
      break;
  }
  return {0, 0};
}

bool benchmarked(models::OpKind k) {
  using models::OpKind;
  return k == OpKind::Norm || k == OpKind::Residual || k == OpKind::Activation || k == OpKind::Rope ||
         k == OpKind::AttentionCore || k == OpKind::Loss;
}

}  // namespace

std::vector<OpBenchmarkRow> benchmark_ops(const models::ModelSpec& spec, const OpBenchmarkOptions& options,
                                          const std::function<void(int, int)>& progress) {
  for (int tp : options.tp_degrees)
    if (tp < 1 || spec.heads % tp != 0 || spec.kv_heads % tp != 0 || spec.ffn % tp != 0)
      input_error("--tp-degrees: {} does not divide model {}'s heads ({}), kv_heads ({}) and ffn ({})", tp,
                  spec.name, spec.heads, spec.kv_heads, spec.ffn);
  // The op kinds of one block and of the head (final norm, loss), unique per work size.
  struct Job {
    models::OpKind kind;
    double work;
    Shape shape;
    std::string label;
  };
  std::vector<Job> jobs;
  // One row per (kind, work): equal work is the same kernel on the same element count.
  std::set<std::pair<models::OpKind, double>> seen;
  for (std::int64_t mb : options.micro_batches) {
    const models::ModelGraph g = models::ModelGraph::build(spec, mb);
    for (int tp : options.tp_degrees) {
      Shape s{};
      s.B = static_cast<std::size_t>(mb), s.S = static_cast<std::size_t>(spec.seq_len);
      s.C = static_cast<std::size_t>(spec.hidden), s.N = s.B * s.S;
      s.Hl = static_cast<std::size_t>(spec.heads / tp), s.KVl = static_cast<std::size_t>(spec.kv_heads / tp);
      s.D = static_cast<std::size_t>(spec.head_dim()), s.Fl = static_cast<std::size_t>(spec.ffn / tp);
      s.Vl = static_cast<std::size_t>(planner::padded_vocab(spec.vocab, tp) / tp);
      for (std::size_t gi : {std::size_t{1}, g.groups().size() - 1})
        for (std::size_t v : g.groups()[gi].ops) {
          const models::Op& op = g.op(v);
          if (!benchmarked(op.kind)) continue;
          const double work = costmodel::op_work(op, tp, false, costmodel::DType::Fp32);
          if (!(work > 0) || !seen.insert({op.kind, work}).second) continue;
          jobs.push_back({op.kind, work, s, fmt::format("mb {}, tp {}", mb, tp)});
        }
    }
  }
  std::vector<OpBenchmarkRow> rows;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const auto [f, b] = time_op(j.kind, spec, j.shape, options);
    OpBenchmarkRow r;
    r.sample = costmodel::OpSample{models::to_string(j.kind), j.work, std::max(f, 1e-9) * 1e6,
                                   std::max(b, 1e-9) * 1e6};
    r.shape = j.label;
    rows.push_back(std::move(r));
    if (progress) progress(static_cast<int>(i + 1), static_cast<int>(jobs.size()));
  }
  return rows;
}

}  // namespace strata::calibration
