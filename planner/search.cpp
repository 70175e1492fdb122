// The search: enumerate the strategy space, validate, screen every valid candidate (its
// exact memory and a proven lower bound on its iteration time, SimEngine::screen), simulate
// the ones that fit and can still reach the top_k (one SimEngine per thread: graphs, layer
// costs, placements, partitions and pipeline walks are cached across candidates), keep the
// top_k that fit memory. Pruning never changes the result (see pass 2 below).
//
// Space (each axis can be pinned by SearchOptions):
//   tp   divisors of gpus that divide heads and kv_heads (cross-node tp included: it is
//        simply slow);
//   cp   1, and the powers of two dividing gpus / tp for which 2 * cp divides seq_len and
//        each rank keeps at least kMinCpTokens tokens (a bound on the space, not a cost:
//        pin --cp to go below it); only under a flash / cuDNN attention stack;
//   pp   divisors of gpus / (tp * cp) with pp <= layers;  dp = gpus / (tp * cp * pp);
//   micro_batch  powers of two up to kMaxMicroBatch dividing global_batch / dp (1 when
//        dp does not divide the global batch: validate() then rejects it as invalid);
//   vpp  1, and for pp > 1 with micro-batches % pp == 0 (interleaved schedule): with
//        layers % pp == 0 the divisors 2..kMaxVpp of layers / pp; otherwise (uneven stages)
//        the divisors 2..kMaxVpp of layers with pp * vpp <= layers, which Megatron-LM's
//        first / last stage counts can run (the split may still need a per-stage layout);
//   zero {0, 1, 2, 3} (> 0 only when dp * cp > 1: otherwise it is the same layout);
//   recompute {none, selective, full};  sequence_parallel {false, true when tp > 1};
//   MoE models on a Megatron-Core stack, for the layouts that fit with full recompute but
//        not without: selective with the module sets published MoE layouts run
//        (moe_recompute_sets; a set only where the smaller sets it contains do not fit,
//        add_moe_recompute_variants);
//   schedule 1f1b (vpp = 1) or interleaved (vpp > 1); GPipe only when asked for.
//   MoE models: ep over the divisors of experts and etp over the divisors of tp (Megatron's
//   advice is etp <= tp, usually 1) with ep * etp dividing tp * cp * dp; sequence
//   parallelism only when tp > 1 (Megatron requires it for MoE). Dense models: ep = etp = 1.
// Ranking: iteration time, then peak memory, then enumeration order (deterministic, whatever
// the number of threads the candidates are simulated on).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>

#include "common/errors.h"
#include "costmodel/prediction_band.h"
#include "planner/detail/sim_engine.h"
#include "planner/stack_support.h"
#include "planner/search.h"

namespace strata::planner {

namespace {

constexpr std::int64_t kDefaultGlobalBatch = 512;
constexpr std::int64_t kMaxMicroBatch = 16;
constexpr int kMaxVpp = 8;
// Threads the search simulates on (at most; fewer for small spaces, where starting a
// thread and building its caches would cost more than it saves).
constexpr std::int64_t kMaxThreads = 8;
constexpr std::int64_t kMinCandidatesPerThread = 256;
// Most candidates a simulating thread takes at a time (a run sharing a pipeline schedule).
constexpr std::size_t kCandidatesPerChunk = 64;
// A lower bound prunes only when it exceeds the k-th best time by more than this relative
// margin: the bound adds the same terms as the simulation in another order (rounding
// differences ~1e-13 for a million terms), so nothing within it is pruned.
constexpr double kBoundRoundingMargin = 1e-9;
// Shortest sequence share per context-parallel rank the search tries (see above).
constexpr std::int64_t kMinCpTokens = 2048;

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

template <typename T>
std::vector<T> pinned_or(const std::optional<T>& pin, std::vector<T> all) {
  if (pin) return {*pin};
  return all;
}

// (ep, etp) pairs for a tp x dp stage: {(1, 1)} for dense models.
std::vector<std::pair<int, int>> expert_layouts(const models::ModelSpec& model, int tp, int dp,
                                                const SearchOptions& o) {
  if (!model.moe) return {{o.ep.value_or(1), o.etp.value_or(1)}};
  std::vector<std::pair<int, int>> out;
  const long long stage = static_cast<long long>(tp) * dp;
  for (int etp : o.etp ? std::vector<int>{*o.etp} : divisors(tp)) {
    if (etp < 1 || model.moe->expert_ffn % etp != 0) continue;
    const std::vector<int> eps = o.ep ? std::vector<int>{*o.ep}
                                      : divisors(static_cast<int>(std::min<long long>(stage, model.moe->experts)));
    for (int ep : eps)
      if (ep >= 1 && model.moe->experts % ep == 0 && stage % (static_cast<long long>(ep) * etp) == 0)
        out.emplace_back(ep, etp);
  }
  if (out.empty()) out.emplace_back(o.ep.value_or(1), o.etp.value_or(1));  // rejected by validate()
  return out;
}

bool better(const Prediction& a, std::int64_t ia, const Prediction& b, std::int64_t ib) {
  if (a.iteration_s != b.iteration_s) return a.iteration_s < b.iteration_s;
  if (a.peak_memory_gib != b.peak_memory_gib) return a.peak_memory_gib < b.peak_memory_gib;
  return ia < ib;
}

// The search's input checks that do not need the space (the order of the messages is part
// of the interface: the first problem is reported).
void check_search_options(const costmodel::ClusterSpec& cluster, const SearchOptions& options) {
  if (options.gpus <= 0) input_error("--gpus ({}) must be > 0", options.gpus);
  if (options.gpus > cluster.total_gpus())
    input_error("--gpus ({}) exceeds cluster {} ({} nodes x {} GPUs = {})", options.gpus,
                cluster.name, cluster.nodes, cluster.gpus_per_node, cluster.total_gpus());
  if (options.top_k < 1) input_error("--top ({}) must be >= 1", options.top_k);
  if (options.global_batch < 0)
    input_error("--global-batch ({}) must be > 0", options.global_batch);
}

// Tensor-parallel sizes: divisors of gpus that divide heads and kv_heads, or the pinned one.
std::vector<int> tp_degrees(const models::ModelSpec& model, int gpus, const SearchOptions& options) {
  std::vector<int> tps;
  for (int tp : divisors(gpus))
    if (options.tp ? tp == *options.tp
                   : (model.heads % tp == 0 && (model.kv_heads <= 0 || model.kv_heads % tp == 0)))
      tps.push_back(tp);
  return tps;
}

// Context-parallel sizes for a tp (see the top of this file).
std::vector<int> cp_degrees(const models::ModelSpec& model, int gpus, int tp, const SearchOptions& options,
                            const costmodel::SoftwareStack& stack) {
  std::vector<int> cps;
  if (options.cp) {
    if ((gpus / tp) % *options.cp == 0) cps.push_back(*options.cp);
  } else {
    cps.push_back(1);
    for (int cp = 2; stack.flash_like() && (gpus / tp) % cp == 0; cp *= 2) {
      if (model.seq_len % (2 * static_cast<std::int64_t>(cp)) != 0 || model.seq_len / cp < kMinCpTokens)
        break;
      cps.push_back(cp);
    }
  }
  return cps;
}

// Micro-batch sizes for a dp.
std::vector<std::int64_t> micro_batches(std::int64_t gb, int dp, const SearchOptions& options) {
  std::vector<std::int64_t> mbs;
  if (options.micro_batch) {
    mbs.push_back(*options.micro_batch);
  } else if (gb % dp != 0) {
    mbs.push_back(1);  // rejected by validate(): counted as invalid
  } else {
    for (std::int64_t mb = 1; mb <= kMaxMicroBatch; mb *= 2)
      if ((gb / dp) % mb == 0) mbs.push_back(mb);
  }
  return mbs;
}

// Virtual pipeline sizes for a pp and m micro-batches per replica: the even splits, and
// where pp does not divide the layers, those Megatron-LM's first / last stage counts can
// take (every count a multiple of vpp, so vpp divides the layers; planner/first_last_stages.h).
std::vector<int> vpp_degrees(int layers, int pp, std::int64_t m, const SearchOptions& options) {
  std::vector<int> vpps;
  if (options.vpp) {
    vpps.push_back(*options.vpp);
  } else {
    vpps.push_back(1);
    if (pp > 1 && m > 0 && m % pp == 0 &&
        !(options.schedule && *options.schedule != ScheduleKind::Interleaved))
      for (int v = 2; v <= kMaxVpp; ++v) {
        const bool even = layers % pp == 0 && (layers / pp) % v == 0;
        const bool first_last = layers % pp != 0 && layers % v == 0 && static_cast<long long>(pp) * v <= layers;
        if (even || first_last) vpps.push_back(v);
      }
  }
  return vpps;
}

// Every recompute, sequence-parallel, ZeRO and expert variant of one layout (dp, tp, pp,
// cp, vpp, micro_batch set in `layout`), appended to `space`.
void add_variants(const models::ModelSpec& model, const SearchOptions& options, const Strategy& layout,
                  const costmodel::SoftwareStack& stack, std::vector<Strategy>& space) {
  const int tp = layout.tp, dp = layout.dp, cp = layout.cp;
  for (Recompute rc : pinned_or<Recompute>(options.recompute,
                                           {Recompute::None, Recompute::Selective, Recompute::Full})) {
    for (bool sp : pinned_or<bool>(options.sequence_parallel,
                                   tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false})) {
      if (model.moe && tp > 1 && !sp && !options.sequence_parallel) continue;
      for (int zero : pinned_or<int>(options.zero,
                                     dp * cp > 1 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0})) {
        for (const auto& [ep, etp] : expert_layouts(model, tp, dp * cp, options)) {
          Strategy s = layout;
          s.zero = zero;
          s.recompute = rc;
          s.sequence_parallel = sp;
          s.ep = ep;
          s.etp = etp;
          if (rc == Recompute::Selective && options.recompute_modules) s.recompute_modules = *options.recompute_modules;
          if (stack_refusal(s, stack).empty()) space.push_back(with_stack_recompute(s, stack));  // what the stack cannot run at all
        }
      }
    }
  }
}

// Megatron-Core module sets (--recompute-modules) that published MoE layouts recompute, in
// place of strata's `selective` (the attention core):
//   {layernorm, moe_act}          yanring/Megatron-MoE-ModelZoo best_practice/qwen3 (e865051),
//                                 the H100 table's Qwen3-235B-A22B layouts;
//   {mla_up_proj}                 NVIDIA/dgxc-benchmarking v25.05 (68eaf7e1) deepseek_v3 launch.sh;
//   {mla_up_proj, mlp}            NVIDIA-NeMo/Megatron-Bridge performance-summary 25.09
//                                 (fa0315ae2), DeepSeek-V3 on H100;
//   {mla_up_proj, mlp, moe}       NVIDIA/dgxc-benchmarking v25.08.02 (4eca8010) deepseek_v3.
// (bench/validation/moe-h100.yaml carries those rows.) Each only where the model has what it
// names (mla_up_proj: multi-latent attention; mlp: dense blocks beside the experts), and
// neither moe_act nor layernorm in FP8: Megatron-Core refuses them under delayed scaling
// (TransformerConfig.__post_init__ at d98e8a64). Empty for dense models, for stacks whose
// selective recompute is not Megatron-Core's (TorchTitan's per-op policy), when the modules
// are pinned (--recompute-modules) or recompute is pinned to none or full.
std::vector<costmodel::RecomputeModules> moe_recompute_sets(const models::ModelSpec& model,
                                                            const SearchOptions& options,
                                                            const costmodel::SoftwareStack& stack) {
  if (!model.moe || options.recompute_modules || stack.selective_recompute.any() ||
      !stack.supports.selective_recompute || (options.recompute && *options.recompute != Recompute::Selective))
    return {};
  const bool fp8 = options.precision.empty() ? stack.precision == costmodel::DType::Fp8 : options.precision == "fp8";
  std::vector<costmodel::RecomputeModules> sets;
  costmodel::RecomputeModules m;
  if (!fp8) {
    m.layernorm = m.moe_act = true;
    sets.push_back(m);
  }
  if (model.mla) {
    m = {};
    m.mla_up_proj = true;
    sets.push_back(m);
    if (model.has_dense_layers()) {
      m.mlp = true;
      sets.push_back(m);
      m.moe = true;
      sets.push_back(m);
    }
  }
  return sets;
}

// The whole space, in enumeration order (tp, cp, pp, micro_batch, vpp, then the variants).
std::vector<Strategy> enumerate_space(const models::ModelSpec& model, const SearchOptions& options,
                                      const costmodel::SoftwareStack& stack, std::int64_t gb) {
  const int gpus = options.gpus;
  const int layers = static_cast<int>(model.layers);
  std::vector<Strategy> space;
  for (int tp : tp_degrees(model, gpus, options)) {
    for (int cp : cp_degrees(model, gpus, tp, options, stack)) {
      for (int pp : divisors(gpus / (tp * cp))) {
        if (options.pp ? pp != *options.pp : pp > layers) continue;
        const int dp = gpus / (tp * cp * pp);
        if (options.dp && dp != *options.dp) continue;
        for (std::int64_t mb : micro_batches(gb, dp, options)) {
          const std::int64_t m = (mb * dp > 0 && gb % (mb * dp) == 0) ? gb / (mb * dp) : 0;
          for (int vpp : vpp_degrees(layers, pp, m, options)) {
            ScheduleKind kind = vpp > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB;
            if (options.schedule) {
              if (*options.schedule == ScheduleKind::Interleaved && vpp == 1 && !options.vpp) continue;
              if (*options.schedule != ScheduleKind::Interleaved && vpp > 1 && !options.vpp) continue;
              kind = *options.schedule;
            }
            Strategy layout;
            layout.dp = dp;
            layout.tp = tp;
            layout.pp = pp;
            layout.cp = cp;
            layout.vpp = vpp;
            layout.micro_batch = mb;
            layout.global_batch = gb;
            layout.schedule = kind;
            layout.precision = options.precision;
            add_variants(model, options, layout, stack, space);
          }
        }
      }
    }
  }
  return space;
}

// Group candidates that share a pipeline schedule (kind, pp, micro-batches, vpp), so the
// simulator compiles each schedule once; ties keep the enumeration order (ZeRO stages of
// one layout stay adjacent and reuse the pipeline walk).
void group_by_schedule(std::vector<Strategy>& space) {
  std::stable_sort(space.begin(), space.end(), [](const Strategy& a, const Strategy& b) {
    const auto ka = std::make_tuple(a.pp, a.vpp, static_cast<int>(a.schedule),
                                    a.micro_batch * a.dp > 0 ? a.global_batch / (a.micro_batch * a.dp) : 0);
    const auto kb = std::make_tuple(b.pp, b.vpp, static_cast<int>(b.schedule),
                                    b.micro_batch * b.dp > 0 ? b.global_batch / (b.micro_batch * b.dp) : 0);
    return ka < kb;
  });
}

// One SimEngine (with its own caches) per thread; run() runs a body on every thread and
// rethrows the first error.
class EnginePool {
 public:
  EnginePool(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
             const SearchOptions& options, int threads)
      : model_(model), cluster_(cluster), options_(options), threads_(threads),
        engines_(static_cast<std::size_t>(threads)), errors_(static_cast<std::size_t>(threads)) {}

  int threads() const { return threads_; }
  detail::SimEngine& engine(int tid) { return *engines_[static_cast<std::size_t>(tid)]; }

  void run(const std::function<void(int)>& body) {
    auto guarded = [&](int tid) {
      try {
        if (!engines_[static_cast<std::size_t>(tid)])
          engines_[static_cast<std::size_t>(tid)] = std::make_unique<detail::SimEngine>(
              model_, cluster_, options_.stack, options_.precision);
        body(tid);
      } catch (...) {
        errors_[static_cast<std::size_t>(tid)] = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    for (int tid = 1; tid < threads_; ++tid) pool.emplace_back(guarded, tid);
    guarded(0);
    for (auto& th : pool) th.join();
    for (auto& e : errors_)
      if (e) std::rethrow_exception(e);
  }

 private:
  const models::ModelSpec& model_;
  const costmodel::ClusterSpec& cluster_;
  const SearchOptions& options_;
  int threads_;
  std::vector<std::unique_ptr<detail::SimEngine>> engines_;
  std::vector<std::exception_ptr> errors_;
};

// Threads to simulate on: the option, else the machine's cores (at most kMaxThreads), and
// fewer for small spaces.
int search_threads(const SearchOptions& options, std::int64_t total) {
  if (options.threads < 0) input_error("search threads ({}) must be >= 0", options.threads);
  const std::int64_t want =
      options.threads > 0
          ? options.threads
          : std::min<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()), kMaxThreads);
  return static_cast<int>(std::clamp<std::int64_t>(
      want, 1, std::max<std::int64_t>(1, (total + kMinCandidatesPerThread - 1) / kMinCandidatesPerThread)));
}

constexpr double kInvalid = -1;  // Screened::peak_memory_gib of a candidate validate() rejects

struct Screened {
  double lower_bound_s = 0, estimate_s = 0, peak_memory_gib = kInvalid;
  bool fits = false;
};

// Pass 1's work: the candidates grouped by what sets their placements and layer-cost
// tables (tp, cp, ep, etp: each engine caches those, the costliest part of a screening),
// largest group first. A thread that screens a whole group builds that group's cache
// entries alone; contiguous slices of the schedule-grouped space made every thread build
// nearly every table. A group larger than total / (2 x threads) (a dense model has a few,
// one per tp and cp) is cut into pieces of that size, in micro-batch order (the tables are
// per micro-batch too), so that every thread has work. Returns the pieces' candidates back
// to back and where each begins.
std::pair<std::vector<std::int64_t>, std::vector<std::size_t>> screening_groups(const std::vector<Strategy>& space,
                                                                                int threads) {
  const auto key = [&](std::int64_t i) {
    const Strategy& s = space[static_cast<std::size_t>(i)];
    return std::make_tuple(s.tp, s.cp, s.ep, s.etp);
  };
  std::vector<std::int64_t> order(space.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return std::make_pair(key(a), space[static_cast<std::size_t>(a)].micro_batch) <
           std::make_pair(key(b), space[static_cast<std::size_t>(b)].micro_batch);
  });
  const std::size_t piece = std::max<std::size_t>(1, order.size() / (2 * static_cast<std::size_t>(threads)));
  std::vector<std::pair<std::size_t, std::size_t>> runs;  // [begin, end) in `order`
  for (std::size_t b = 0; b < order.size();) {
    std::size_t e = b + 1;
    while (e < order.size() && key(order[e]) == key(order[b])) ++e;
    const std::size_t cuts = (e - b + piece - 1) / piece;
    for (std::size_t c = 0; c < cuts; ++c) runs.emplace_back(b + (e - b) * c / cuts, b + (e - b) * (c + 1) / cuts);
    b = e;
  }
  std::stable_sort(runs.begin(), runs.end(), [](const auto& x, const auto& y) {
    return x.second - x.first > y.second - y.first;
  });
  std::vector<std::int64_t> grouped;
  grouped.reserve(order.size());
  std::vector<std::size_t> begin;
  for (const auto& [b, e] : runs) {
    begin.push_back(grouped.size());
    grouped.insert(grouped.end(), order.begin() + static_cast<std::ptrdiff_t>(b),
                   order.begin() + static_cast<std::ptrdiff_t>(e));
  }
  begin.push_back(grouped.size());
  return {std::move(grouped), std::move(begin)};
}

// One candidate's screening: kInvalid memory for what validate() rejects or is too large to
// simulate; an InputError naming the layout for what the model cannot cost.
Screened screen_one(detail::SimEngine& engine, const models::ModelSpec& model, const Strategy& s) {
  if (!validate(s, model).empty() || !detail::too_large_to_simulate(s).empty()) return {};
  detail::Screening sc;
  try {
    sc = engine.screen(s);
  } catch (const InputError& e) {  // a layout the model cannot cost: say which one
    input_error("searching tp {} pp {} dp {} cp {} ep {} etp {} vpp {} micro-batch {}: {}", s.tp, s.pp, s.dp,
                s.cp, s.ep, s.etp, s.vpp, s.micro_batch, e.what());
  }
  return Screened{sc.lower_bound_s, sc.estimate_s, sc.peak_memory_gib, sc.fits_memory};
}

// Pass 1: screen every candidate, a group (screening_groups) at a time on whichever
// thread is free. What a screening returns does not depend on the thread or the order.
// `screened_by` gets the thread that screened each candidate (its engine holds the tables).
std::vector<Screened> screen_space(const models::ModelSpec& model, const std::vector<Strategy>& space,
                                   const SearchOptions& options, EnginePool& pool, std::vector<int>& screened_by) {
  const auto total = static_cast<std::int64_t>(space.size());
  std::vector<Screened> screened(space.size());
  screened_by.assign(space.size(), 0);
  // Named references, not a structured binding: the lambda below captures them (clang before
  // 16 refuses to capture bindings).
  const auto groups = screening_groups(space, pool.threads());
  const std::vector<std::int64_t>& order = groups.first;
  const std::vector<std::size_t>& group_begin = groups.second;
  std::atomic<std::size_t> next_group{0};
  std::atomic<std::int64_t> done{0};
  pool.run([&](int tid) {
    detail::SimEngine& engine = pool.engine(tid);
    for (;;) {
      const std::size_t g = next_group.fetch_add(1);
      if (g + 1 >= group_begin.size()) break;
      for (std::size_t k = group_begin[g]; k < group_begin[g + 1]; ++k) {
        const auto i = static_cast<std::size_t>(order[k]);
        const std::int64_t n = done.fetch_add(1, std::memory_order_relaxed);
        if (tid == 0 && options.progress && (n % 1024 == 0)) options.progress(n, total);
        screened[i] = screen_one(engine, model, space[i]);
        screened_by[i] = tid;
      }
    }
  });
  return screened;
}

bool includes(const costmodel::RecomputeModules& big, const costmodel::RecomputeModules& small) {
  for (const auto& k : costmodel::detail::kRecomputeModules)
    if (small.*k.flag && !(big.*k.flag)) return false;
  return true;
}

// Pass 1b: the module-set variants (moe_recompute_sets) of the layouts that do not fit memory
// without recompute but do with full recompute (recompute pinned to selective: that do not fit
// with strata's selective), screened and appended to the space in its order. A set is tried
// for a layout only when every smaller set of the list it contains did not fit: each module
// adds recompute time and frees memory, so a superset of a set that fits (or a set on a
// layout that fits without recompute) would only be a slower copy, and a layout that does not
// fit with full recompute keeps more with any set. This defines the space; it is not a
// pruning: the exhaustive search (prune = false) adds the same candidates.
void add_moe_recompute_variants(const models::ModelSpec& model, const costmodel::SoftwareStack& stack,
                                const SearchOptions& options, EnginePool& pool, std::vector<Strategy>& space,
                                std::vector<Screened>& screened, const std::vector<int>& screened_by) {
  const std::vector<costmodel::RecomputeModules> sets = moe_recompute_sets(model, options, stack);
  if (sets.empty()) return;
  const Recompute lightest = options.recompute.value_or(Recompute::None);
  const bool need_full = !options.recompute;  // full is in the space: it must fit
  const auto layout = [](const Strategy& s) {
    return std::make_tuple(s.tp, s.pp, s.dp, s.cp, s.vpp, s.micro_batch, s.zero, s.sequence_parallel, s.ep, s.etp,
                           s.schedule);
  };
  std::map<decltype(layout(space.front())), bool> full_fits;
  if (need_full)
    for (std::size_t i = 0; i < space.size(); ++i)
      if (space[i].recompute == Recompute::Full && space[i].recompute_layers == 0)
        full_fits[layout(space[i])] = screened[i].fits;
  std::vector<std::size_t> bases;
  for (std::size_t i = 0; i < space.size(); ++i) {
    const Strategy& s = space[i];
    if (s.recompute != lightest || screened[i].peak_memory_gib == kInvalid || screened[i].fits) continue;
    if (need_full) {
      const auto f = full_fits.find(layout(s));
      if (f == full_fits.end() || !f->second) continue;
    }
    bases.push_back(i);
  }
  enum : signed char { kUntried = 0, kFits = 1, kDoesNotFit = -1 };  // an invalid variant: kDoesNotFit
  std::vector<std::vector<signed char>> state(bases.size(), std::vector<signed char>(sets.size(), kUntried));
  for (bool changed = true; changed;) {  // rounds: the smallest untried sets whose subsets did not fit
    changed = false;
    std::vector<Strategy> round;
    std::vector<std::pair<std::size_t, std::size_t>> owner;  // (base, set) of each
    for (std::size_t b = 0; b < bases.size(); ++b)
      for (std::size_t k = 0; k < sets.size(); ++k) {
        if (state[b][k] != kUntried) continue;
        bool ready = true;
        for (std::size_t j = 0; j < sets.size(); ++j)
          if (j != k && includes(sets[k], sets[j]) && state[b][j] != kDoesNotFit) ready = false;
        if (!ready) continue;
        Strategy v = space[bases[b]];
        v.recompute = Recompute::Selective;
        v.recompute_modules = sets[k];
        if (!validate(v, model).empty() || !stack_refusal(v, stack).empty()) {
          state[b][k] = kDoesNotFit;
          changed = true;
          continue;
        }
        round.push_back(v);
        owner.emplace_back(b, k);
      }
    if (round.empty()) continue;
    changed = true;
    // Each variant on the thread that screened its base: that engine holds the layout's
    // tables (the variants share them), so no other thread builds them again.
    std::vector<std::vector<std::size_t>> mine(static_cast<std::size_t>(pool.threads()));
    for (std::size_t j = 0; j < round.size(); ++j)
      mine[static_cast<std::size_t>(screened_by[bases[owner[j].first]])].push_back(j);
    std::vector<Screened> sc(round.size());
    pool.run([&](int tid) {
      for (std::size_t j : mine[static_cast<std::size_t>(tid)]) sc[j] = screen_one(pool.engine(tid), model, round[j]);
    });
    for (std::size_t j = 0; j < round.size(); ++j)
      state[owner[j].first][owner[j].second] = sc[j].fits ? kFits : kDoesNotFit;
    space.insert(space.end(), round.begin(), round.end());
    screened.insert(screened.end(), sc.begin(), sc.end());
  }
}

// The candidates to simulate, in order: the top_k smallest estimates first when pruning,
// the rest after them in enumeration order. Counts the invalid and over-memory ones into
// `result` and finds the smallest-memory candidate over the device's (`closest`).
std::vector<std::int64_t> simulation_order(const std::vector<Screened>& screened, const SearchOptions& options,
                                           SearchResult& result, std::int64_t& closest) {
  const auto total = static_cast<std::int64_t>(screened.size());
  std::vector<std::int64_t> work;  // candidates to simulate, in order
  closest = -1;                    // smallest memory over the device's, first in enumeration
  for (std::int64_t i = 0; i < total; ++i) {
    const Screened& c = screened[i];
    if (c.peak_memory_gib == kInvalid) {
      ++result.invalid;
      continue;
    }
    ++result.candidates_evaluated;
    if (c.fits || !options.prune) work.push_back(i);
    if (!c.fits) {
      ++result.infeasible_memory;
      if (closest < 0 || c.peak_memory_gib < screened[closest].peak_memory_gib) closest = i;
    }
  }
  if (options.prune && !work.empty()) {
    const std::size_t seeds = std::min(work.size(), static_cast<std::size_t>(options.top_k));
    std::vector<std::int64_t> by_estimate = work;
    std::partial_sort(by_estimate.begin(), by_estimate.begin() + static_cast<std::ptrdiff_t>(seeds),
                      by_estimate.end(), [&](std::int64_t a, std::int64_t b) {
                        return std::make_pair(screened[a].estimate_s, a) <
                               std::make_pair(screened[b].estimate_s, b);
                      });
    by_estimate.resize(seeds);
    std::vector<char> seeded(screened.size(), 0);
    for (std::int64_t i : by_estimate) seeded[i] = 1;
    std::vector<std::int64_t> rest;
    rest.reserve(work.size() - seeds);
    for (std::int64_t i : work)
      if (!seeded[i]) rest.push_back(i);
    work = std::move(by_estimate);
    work.insert(work.end(), rest.begin(), rest.end());
  }
  return work;
}

// Where pass 2's chunks of work begin (plus the end): one seed at a time (they set the
// threshold), then runs of candidates with the same pipeline schedule (one thread then
// compiles it), at most kCandidatesPerChunk long.
std::vector<std::size_t> work_chunks(const std::vector<Strategy>& space, const std::vector<std::int64_t>& work,
                                     std::size_t seeds) {
  std::vector<std::size_t> chunk_begin;
  for (std::size_t k = 0; k < work.size(); ++k) {
    const Strategy& s = space[work[k]];
    const bool same_schedule =
        k > seeds && k - chunk_begin.back() < kCandidatesPerChunk && [&] {
          const Strategy& prev = space[work[k - 1]];
          return s.pp == prev.pp && s.vpp == prev.vpp && s.schedule == prev.schedule &&
                 s.num_microbatches() == prev.num_microbatches();
        }();
    if (!same_schedule) chunk_begin.push_back(k);
  }
  chunk_begin.push_back(work.size());
  return chunk_begin;
}

using Ranked = std::pair<std::int64_t, SimulationResult>;  // (enumeration index, result)

// Pass 2: simulate the work, keeping one shared top_k; a candidate whose bound exceeds the
// k-th best so far is pruned. Counts into result.simulated and result.pruned.
std::vector<Ranked> simulate_top(const std::vector<Strategy>& space, const std::vector<Screened>& screened,
                                 const std::vector<std::int64_t>& work, const SearchOptions& options,
                                 EnginePool& pool, SearchResult& result) {
  const std::size_t seeds = options.prune ? std::min(work.size(), static_cast<std::size_t>(options.top_k)) : 0;
  const std::vector<std::size_t> chunk_begin = work_chunks(space, work, seeds);
  std::mutex top_mutex;
  std::vector<Ranked> top;
  std::atomic<double> kth_best{std::numeric_limits<double>::infinity()};
  std::atomic<std::size_t> next_chunk{0};
  std::atomic<std::int64_t> simulated{0}, pruned{0};
  pool.run([&](int tid) {
    detail::SimEngine& engine = pool.engine(tid);
    for (;;) {
      const std::size_t chunk = next_chunk.fetch_add(1);
      if (chunk + 1 >= chunk_begin.size()) break;
      const std::size_t lo = chunk_begin[chunk], hi = chunk_begin[chunk + 1];
      for (std::size_t k = lo; k < hi; ++k) {
        const std::int64_t i = work[k];
        const Screened& c = screened[i];
        // Ties with the k-th best could still rank by memory: only a strictly larger
        // bound prunes (with a margin for the rounding of sums taken in another order).
        if (options.prune && c.lower_bound_s * (1 - kBoundRoundingMargin) > kth_best.load(std::memory_order_relaxed)) {
          pruned.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        SimulationResult r = engine.run(space[i], /*timeline=*/false);
        simulated.fetch_add(1, std::memory_order_relaxed);
        const Prediction& p = r.prediction;
        STRATA_CHECK(p.peak_memory_gib == c.peak_memory_gib && p.fits_memory == c.fits,
                     "search: screened memory {} GiB differs from the simulation's {} GiB",
                     c.peak_memory_gib, p.peak_memory_gib);
        STRATA_CHECK(c.lower_bound_s * (1 - kBoundRoundingMargin) <= p.iteration_s,
                     "search: lower bound {} s above the simulated iteration {} s", c.lower_bound_s,
                     p.iteration_s);
        if (!p.fits_memory) continue;
        std::lock_guard<std::mutex> lock(top_mutex);
        if (static_cast<int>(top.size()) == options.top_k &&
            !better(p, i, top.back().second.prediction, top.back().first))
          continue;
        auto pos = top.begin();
        while (pos != top.end() && !better(p, i, pos->second.prediction, pos->first)) ++pos;
        top.insert(pos, Ranked(i, std::move(r)));
        if (static_cast<int>(top.size()) > options.top_k) top.pop_back();
        if (static_cast<int>(top.size()) == options.top_k)
          kth_best.store(top.back().second.prediction.iteration_s, std::memory_order_relaxed);
      }
    }
  });
  result.simulated = simulated.load();
  result.pruned = pruned.load();
  return top;
}

Candidate make_candidate(const Strategy& s, SimulationResult&& r, detail::SimEngine& engine,
                         const std::string& device) {
  Candidate c;
  c.strategy = s;
  c.prediction = std::move(r.prediction);
  c.prediction.notes = engine.notes(c.strategy);
  if (auto w = costmodel::mfu_warning(device, c.prediction.mfu, c.prediction.uncertainty_high, engine.fp8()); !w.empty()) c.prediction.notes.push_back(w);
  c.stage_layers = std::move(r.stage_layers);
  return c;
}

}  // namespace

SearchResult search(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                    const SearchOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  check_search_options(cluster, options);
  const std::int64_t gb = options.global_batch > 0 ? options.global_batch : kDefaultGlobalBatch;
  const int gpus = options.gpus;
  if (options.tp && gpus % *options.tp != 0)
    input_error("--tp ({}) must divide --gpus ({})", *options.tp, gpus);
  if (options.cp && gpus % *options.cp != 0)
    input_error("--cp ({}) must divide --gpus ({})", *options.cp, gpus);
  const costmodel::SoftwareStack stack =
      options.stack ? *options.stack
                    : costmodel::load_software_stack(costmodel::default_software_stack_name(cluster.device));
  if (options.cp && *options.cp > 1 && !stack.flash_like())
    input_error("--cp ({}) > 1 needs a flash / cuDNN attention kernel, but stack '{}' runs unfused "
                "attention",
                *options.cp, stack.name);

  {  // Options pinned to something the stack cannot run: say so instead of an empty space.
    Strategy pinned;
    pinned.sequence_parallel = options.sequence_parallel.value_or(false);
    pinned.recompute = options.recompute.value_or(Recompute::None);
    pinned.zero = options.zero.value_or(0);
    pinned.tp = options.tp.value_or(1);
    pinned.pp = options.pp.value_or(1);
    pinned.cp = options.cp.value_or(1);
    pinned.ep = options.ep.value_or(1);
    pinned.etp = options.etp.value_or(1);
    pinned.precision = options.precision;
    if (const std::string why = stack_refusal(pinned, stack); !why.empty()) throw InputError(why);
  }
  if (options.recompute_modules) {  // modules the model has, or an error line, not an empty space
    if (options.recompute && *options.recompute != Recompute::Selective)
      input_error("--recompute-modules needs the selective candidates (--recompute selective, or no --recompute)");
    Strategy probe;
    probe.recompute = Recompute::Selective;
    probe.recompute_modules = *options.recompute_modules;
    for (const Violation& v : validate(probe, model))
      if (v.field == "strategy.recompute_modules") input_error("--recompute-modules: {}", v.message);
  }

  // Enumerate once into a flat list (cheap), so progress knows the total.
  std::vector<Strategy> space = enumerate_space(model, options, stack, gb);
  if (space.empty())
    input_error("no strategy to search: no tp x cp x pp x dp layout of --gpus ({}) matches the "
                "model (heads {}, kv_heads {}, layers {}, seq_len {}) and the pinned options",
                gpus, model.heads, model.kv_heads, model.layers, model.seq_len);
  group_by_schedule(space);

  // Two passes on every core, one engine (with its own caches) per thread:
  //  1. screen every candidate in contiguous slices of the (schedule-grouped) space:
  //     validate it, and compute its memory per rank (exactly the simulation's) and a
  //     lower bound on its iteration time (SimEngine::screen), without the pipeline walk;
  //  2. simulate the ones that fit memory, unless their bound exceeds the k-th best time
  //     simulated so far: first the top_k with the smallest estimates (so that the k-th best
  //     is near its final value at once), then the rest in schedule-grouped order, handed
  //     out in chunks to whichever thread is free. Such a candidate is slower than k others
  //     that fit, so it cannot be in the top_k: leaving it out changes nothing
  //     (SearchOptions::prune = false simulates everything; the tests compare the two).
  // The ranking is by (time, memory, enumeration index), whatever the number of threads.
  SearchResult result;
  const auto total = static_cast<std::int64_t>(space.size());
  EnginePool pool(model, cluster, options, search_threads(options, total));
  std::vector<int> screened_by;
  std::vector<Screened> screened = screen_space(model, space, options, pool, screened_by);
  add_moe_recompute_variants(model, stack, options, pool, space, screened, screened_by);
  std::int64_t closest = -1;
  const std::vector<std::int64_t> work = simulation_order(screened, options, result, closest);
  std::vector<Ranked> top = simulate_top(space, screened, work, options, pool, result);

  detail::SimEngine& engine = pool.engine(0);  // for the notes of the kept plans
  if (options.progress) options.progress(total, total);
  // Every candidate broke a structural rule (pinned options that cannot work): say which.
  if (result.candidates_evaluated == 0) {
    const Strategy& s = space.front();
    if (const std::string why = detail::too_large_to_simulate(s); !why.empty()) throw InputError(why);
    require_valid(s, model);
  }
  for (auto& [i, r] : top) result.ranked.push_back(make_candidate(space[i], std::move(r), engine, cluster.device.name));
  if (result.ranked.empty() && closest >= 0)
    result.closest_infeasible =
        make_candidate(space[closest], engine.run(space[closest], /*timeline=*/false), engine,
                       cluster.device.name);
  result.search_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

Plan to_plan(const models::ModelSpec& model, const std::string& cluster, const Candidate& c) {
  Plan p;
  p.model = model;
  p.cluster = cluster;
  p.strategy = c.strategy;
  p.stage_layers = c.stage_layers;
  p.prediction = c.prediction;
  return p;
}

}  // namespace strata::planner
