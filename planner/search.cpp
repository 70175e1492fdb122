// The search: enumerate the strategy space, validate, simulate every valid candidate with
// one shared SimEngine (graphs, layer costs, placements, partitions and pipeline walks are
// cached across candidates), keep the top_k that fit memory.
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
//   vpp  1, and for pp > 1 with layers % pp == 0 and micro-batches % pp == 0 the divisors
//        2..kMaxVpp of layers / pp (interleaved schedule);
//   zero {0, 1, 2, 3} (> 0 only when dp * cp > 1: otherwise it is the same layout);
//   recompute {none, selective, full};  sequence_parallel {false, true when tp > 1};
//   schedule 1f1b (vpp = 1) or interleaved (vpp > 1); GPipe only when asked for.
// Ranking: iteration time, then peak memory, then enumeration order (deterministic, whatever
// the number of threads the candidates are simulated on).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <tuple>

#include "common/errors.h"
#include "planner/detail/sim_engine.h"
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

bool better(const Prediction& a, std::int64_t ia, const Prediction& b, std::int64_t ib) {
  if (a.iteration_s != b.iteration_s) return a.iteration_s < b.iteration_s;
  if (a.peak_memory_gib != b.peak_memory_gib) return a.peak_memory_gib < b.peak_memory_gib;
  return ia < ib;
}

}  // namespace

SearchResult search(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                    const SearchOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.gpus <= 0) input_error("--gpus ({}) must be > 0", options.gpus);
  if (options.gpus > cluster.total_gpus())
    input_error("--gpus ({}) exceeds cluster {} ({} nodes x {} GPUs = {})", options.gpus,
                cluster.name, cluster.nodes, cluster.gpus_per_node, cluster.total_gpus());
  if (options.top_k < 1) input_error("--top ({}) must be >= 1", options.top_k);
  if (options.global_batch < 0)
    input_error("--global-batch ({}) must be > 0", options.global_batch);
  const std::int64_t gb = options.global_batch > 0 ? options.global_batch : kDefaultGlobalBatch;
  const int gpus = options.gpus;
  const int layers = static_cast<int>(model.layers);

  // Enumerate once into a flat list (cheap), so progress knows the total.
  std::vector<Strategy> space;
  std::vector<int> tps;
  for (int tp : divisors(gpus))
    if (options.tp ? tp == *options.tp
                   : (model.heads % tp == 0 && (model.kv_heads <= 0 || model.kv_heads % tp == 0)))
      tps.push_back(tp);
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
  for (int tp : tps) {
   std::vector<int> cps;
   if (options.cp) {
     if ((gpus / tp) % *options.cp == 0) cps.push_back(*options.cp);
   } else {
     cps.push_back(1);
     for (int cp = 2; stack.flash_like() && (gpus / tp) % cp == 0; cp *= 2) {
       if (model.seq_len % (2 * static_cast<std::int64_t>(cp)) != 0 ||
           model.seq_len / cp < kMinCpTokens)
         break;
       cps.push_back(cp);
     }
   }
   for (int cp : cps) {
    for (int pp : divisors(gpus / (tp * cp))) {
      if (options.pp ? pp != *options.pp : pp > layers) continue;
      const int dp = gpus / (tp * cp * pp);
      if (options.dp && dp != *options.dp) continue;
      std::vector<std::int64_t> mbs;
      if (options.micro_batch) {
        mbs.push_back(*options.micro_batch);
      } else if (gb % dp != 0) {
        mbs.push_back(1);  // rejected by validate(): counted as invalid
      } else {
        for (std::int64_t mb = 1; mb <= kMaxMicroBatch; mb *= 2)
          if ((gb / dp) % mb == 0) mbs.push_back(mb);
      }
      for (std::int64_t mb : mbs) {
        const std::int64_t m = (mb * dp > 0 && gb % (mb * dp) == 0) ? gb / (mb * dp) : 0;
        std::vector<int> vpps;
        if (options.vpp) {
          vpps.push_back(*options.vpp);
        } else {
          vpps.push_back(1);
          if (pp > 1 && layers % pp == 0 && m > 0 && m % pp == 0 &&
              !(options.schedule && *options.schedule != ScheduleKind::Interleaved))
            for (int v = 2; v <= kMaxVpp; ++v)
              if ((layers / pp) % v == 0) vpps.push_back(v);
        }
        for (int vpp : vpps) {
          ScheduleKind kind = vpp > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB;
          if (options.schedule) {
            if (*options.schedule == ScheduleKind::Interleaved && vpp == 1 && !options.vpp) continue;
            if (*options.schedule != ScheduleKind::Interleaved && vpp > 1 && !options.vpp) continue;
            kind = *options.schedule;
          }
          for (Recompute rc : pinned_or<Recompute>(
                   options.recompute, {Recompute::None, Recompute::Selective, Recompute::Full})) {
            for (bool sp : pinned_or<bool>(options.sequence_parallel,
                                           tp > 1 ? std::vector<bool>{false, true}
                                                  : std::vector<bool>{false})) {
              for (int zero : pinned_or<int>(options.zero, dp * cp > 1
                                                               ? std::vector<int>{0, 1, 2, 3}
                                                               : std::vector<int>{0})) {
                Strategy s;
                s.dp = dp;
                s.tp = tp;
                s.pp = pp;
                s.cp = cp;
                s.vpp = vpp;
                s.micro_batch = mb;
                s.global_batch = gb;
                s.zero = zero;
                s.recompute = rc;
                s.sequence_parallel = sp;
                s.schedule = kind;
                space.push_back(s);
              }
            }
          }
        }
      }
    }
   }
  }

  if (space.empty())
    input_error("no strategy to search: no tp x cp x pp x dp layout of --gpus ({}) matches the "
                "model (heads {}, kv_heads {}, layers {}, seq_len {}) and the pinned options",
                gpus, model.heads, model.kv_heads, model.layers, model.seq_len);

  // Group candidates that share a pipeline schedule (kind, pp, micro-batches, vpp), so the
  // simulator compiles each schedule once; ties keep the enumeration order (ZeRO stages of
  // one layout stay adjacent and reuse the pipeline walk).
  std::stable_sort(space.begin(), space.end(), [](const Strategy& a, const Strategy& b) {
    const auto ka = std::make_tuple(a.pp, a.vpp, static_cast<int>(a.schedule),
                                    a.micro_batch * a.dp > 0 ? a.global_batch / (a.micro_batch * a.dp) : 0);
    const auto kb = std::make_tuple(b.pp, b.vpp, static_cast<int>(b.schedule),
                                    b.micro_batch * b.dp > 0 ? b.global_batch / (b.micro_batch * b.dp) : 0);
    return ka < kb;
  });

  // Simulate on every core: contiguous slices of the (schedule-grouped) space, one engine
  // (with its own caches) per thread; each keeps its own top_k, merged in enumeration-
  // index order so the ranking does not depend on the thread count.
  SearchResult result;
  const auto total = static_cast<std::int64_t>(space.size());
  using Ranked = std::pair<std::int64_t, SimulationResult>;  // (enumeration index, result)
  struct Partial {
    std::vector<Ranked> top;
    std::optional<Ranked> closest;
    std::int64_t evaluated = 0, infeasible = 0, invalid = 0;
    std::exception_ptr error;
  };
  if (options.threads < 0) input_error("search threads ({}) must be >= 0", options.threads);
  const std::int64_t want =
      options.threads > 0
          ? options.threads
          : std::min<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()), kMaxThreads);
  const int threads = static_cast<int>(std::clamp<std::int64_t>(
      want, 1, std::max<std::int64_t>(1, (total + kMinCandidatesPerThread - 1) / kMinCandidatesPerThread)));
  std::vector<Partial> parts(static_cast<std::size_t>(threads));
  std::atomic<std::int64_t> done{0};
  auto work = [&](int tid) {
    Partial& out = parts[static_cast<std::size_t>(tid)];
    try {
      detail::SimEngine engine(model, cluster, options.stack);
      const std::int64_t lo = total * tid / threads, hi = total * (tid + 1) / threads;
      for (std::int64_t i = lo; i < hi; ++i) {
        if (tid == 0 && options.progress && (i % 1024 == 0)) options.progress(done.load(), total);
        done.fetch_add(1, std::memory_order_relaxed);
        const Strategy& s = space[i];
        if (!validate(s, model).empty() || !detail::too_large_to_simulate(s).empty()) {
          ++out.invalid;
          continue;
        }
        SimulationResult r = engine.run(s, /*timeline=*/false);
        ++out.evaluated;
        const Prediction& p = r.prediction;
        if (!p.fits_memory) {
          ++out.infeasible;
          if (!out.closest || p.peak_memory_gib < out.closest->second.prediction.peak_memory_gib)
            out.closest.emplace(i, std::move(r));
          continue;
        }
        if (static_cast<int>(out.top.size()) == options.top_k &&
            !better(p, i, out.top.back().second.prediction, out.top.back().first))
          continue;
        auto at = out.top.begin();
        while (at != out.top.end() && !better(p, i, at->second.prediction, at->first)) ++at;
        out.top.insert(at, Ranked(i, std::move(r)));
        if (static_cast<int>(out.top.size()) > options.top_k) out.top.pop_back();
      }
    } catch (...) {
      out.error = std::current_exception();
    }
  };
  {
    std::vector<std::thread> pool;
    for (int tid = 1; tid < threads; ++tid) pool.emplace_back(work, tid);
    work(0);
    for (auto& th : pool) th.join();
  }
  std::vector<Ranked> top;
  std::optional<Ranked> closest;
  for (Partial& part : parts) {
    if (part.error) std::rethrow_exception(part.error);
    result.candidates_evaluated += part.evaluated;
    result.infeasible_memory += part.infeasible;
    result.invalid += part.invalid;
    for (Ranked& r : part.top) top.push_back(std::move(r));
    // Slices are in index order: a later slice's equal-memory candidate never replaces.
    if (part.closest && (!closest || part.closest->second.prediction.peak_memory_gib <
                                         closest->second.prediction.peak_memory_gib))
      closest = std::move(part.closest);
  }
  std::sort(top.begin(), top.end(), [](const Ranked& a, const Ranked& b) {
    return better(a.second.prediction, a.first, b.second.prediction, b.first);
  });
  if (static_cast<int>(top.size()) > options.top_k) top.resize(static_cast<std::size_t>(options.top_k));
  detail::SimEngine engine(model, cluster, options.stack);  // for the notes of the kept plans
  if (options.progress) options.progress(total, total);
  // Every candidate broke a structural rule (pinned options that cannot work): say which.
  if (result.candidates_evaluated == 0) {
    const Strategy& s = space.front();
    if (const std::string why = detail::too_large_to_simulate(s); !why.empty()) throw InputError(why);
    require_valid(s, model);
  }

  for (auto& [i, r] : top) {
    Candidate c;
    c.strategy = space[i];
    c.prediction = std::move(r.prediction);
    c.prediction.notes = engine.notes(c.strategy);
    c.stage_layers = std::move(r.stage_layers);
    result.ranked.push_back(std::move(c));
  }
  if (result.ranked.empty() && closest) {
    Candidate c;
    c.strategy = space[closest->first];
    c.prediction = std::move(closest->second.prediction);
    c.prediction.notes = engine.notes(c.strategy);
    c.stage_layers = std::move(closest->second.stage_layers);
    result.closest_infeasible = std::move(c);
  }
  result.search_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace strata::planner
