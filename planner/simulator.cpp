// The iteration simulator's event engine: it walks one training iteration of a strategy
// and says what is exposed. The costs it times come from the cost-charging files, which
// this file never computes itself:
//   layer_costs.cpp      what each op of one micro-batch costs on one rank (GroupCostTable),
//                        the stack and compute dtype;
//   step_costs.cpp       stage step durations and their parts, pipeline links, gradient
//                        reduction, optimizer step, parameter gather, memory per rank;
//   simulator_notes.cpp  where the numbers came from (Prediction::notes).
// A new cost term belongs in one of those; this file changes only when the order of
// events changes.
//
// One iteration = global_batch / (micro_batch * dp) micro-batches per data-parallel
// replica. The engine:
//  * places the groups (RankGrid: TP / CP / DP / expert groups, pipeline neighbours),
//  * partitions the layer groups into pp x vpp virtual stages (StagePartition over the
//    groups' step costs; Megatron-LM's first / last stage counts where they reach the same
//    most expensive stage as a per-stage layout would) unless the plan gives the partition,
//  * walks every stage's build_schedule() list (PipelineWalk, detail/pipeline_walk.h): per
//    stage a compute stream and a communication stream; sends do not block the sender
//    unless the stack's p2p is blocking (charged into the step, step_costs.cpp); a receive
//    blocks the compute stream until the matching send has arrived (k-th send from a to b
//    matches the k-th receive on b from a),
//  * launches the DP gradient buckets (ZeRO-0/1) as the backward of the last micro-batch
//    finishes their layers, on a DP stream that overlaps the rest of the backward and
//    slows the compute beside it; with tied embeddings and pp > 1 the first and last stage
//    then all-reduce the embedding gradient,
//  * starts every rank's optimizer step (then its ZeRO-1/2 parameter all-gather) once the
//    slowest rank's gradients are ready (gradient clipping: global norm),
//  * and attributes the time (below).
//
// Breakdown (critical-path attribution; the parts sum to iteration_s up to rounding):
// let q be the stage that finishes its gradients last (it gates the optimizer), r the
// stage whose optimizer (+ ZeRO-1 all-gather) ends last, and b the busiest stage (most
// busy time on its compute stream) of those done computing no later than q (b = q when
// no stage is busier). compute and tp_comm are b's busy time; the rest of q's compute end
// (b's waits on receives, then on the stages that finish after it) is split into pp_comm
// = the p2p transfer time (incl. queueing behind earlier sends) along the dependency chain
// that ends at b's last compute step, capped by b's idle time, and bubble = the rest;
// dp_comm = q's exposed gradient reduction (after its last backward) + r's ZeRO-1
// parameter all-gather; optimizer = r's Adam step. ep_comm = b's MoE token dispatch /
// combine (all-to-all over ep, all-gather / reduce-scatter over etp), taken out of
// tp_comm (costmodel/expert_dispatch_cost.h); routed-expert gradients reduce over the edp
// group in the same buckets. Reading the busiest stage names what sets the pace: a light
// stage's steps would show it idle, the bottleneck's work hidden in its bubble.
// bubble_fraction = bubble / iteration_s.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/errors.h"
#include "costmodel/expert_dispatch_cost.h"
#include "costmodel/prediction_band.h"
#include "planner/stack_support.h"
#include "costmodel/rank_grid.h"
#include "planner/detail/group_times.h"
#include "planner/detail/sim_engine.h"
#include "planner/simulator.h"
#include "planner/first_last_stages.h"
#include "planner/plan.h"
#include "planner/stage_partition.h"

namespace strata::planner {

namespace detail {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Two splits whose most expensive stages differ by less than this (relative) reach the same
// optimum: the balanced split's cap is found by bisection to 1e-13 and sums taken in another
// order round differently.
constexpr double kSameMaxCost = 1e-12;

void check_stage_layers(const std::vector<std::vector<int>>& sl, int stages, int groups) {
  if (static_cast<int>(sl.size()) != stages)
    input_error("stage_layers has {} virtual stages, expected pp x vpp = {}", sl.size(), stages);
  int next = 0;
  for (std::size_t v = 0; v < sl.size(); ++v) {
    if (sl[v].empty()) input_error("stage_layers[{}] is empty", v);
    for (int g : sl[v]) {
      if (g != next)
        input_error("stage_layers[{}] lists layer group {} where {} was expected (groups must "
                    "cover 0..{} once, in order)",
                    v, g, next, groups - 1);
      ++next;
    }
  }
  if (next != groups)
    input_error("stage_layers covers layer groups 0..{}, expected 0..{}", next - 1, groups - 1);
}

}  // namespace

std::string too_large_to_simulate(const Strategy& s) {
  const double m = static_cast<double>(s.num_microbatches());
  const double steps = 2.0 * s.pp * m * s.vpp;
  if (steps <= kMaxComputeSteps) return {};
  return fmt::format("strategy.global_batch ({}) gives {} micro-batches per replica; with pp {} "
                     "x vpp {} that is {:.3g} pipeline steps, more than the simulator's limit of "
                     "{:.0g} (use a larger micro_batch or a smaller global_batch)",
                     s.global_batch, s.num_microbatches(), s.pp, s.vpp, steps, kMaxComputeSteps);
}

const SimEngine::Graph& SimEngine::graph_for(std::int64_t micro_batch, int cp) {
  const auto key = std::make_pair(micro_batch, cp);
  auto it = graphs_->by_shape.find(key);
  if (it != graphs_->by_shape.end()) return it->second;
  models::ModelSpec local = model_;
  local.seq_len = model_.seq_len / cp;  // validate() made cp divide it (2*cp chunks)
  Graph g;
  g.graph = std::make_unique<models::ModelGraph>(models::ModelGraph::build(local, micro_batch));
  g.memory = std::make_unique<costmodel::MemoryModel>(*g.graph, cluster_.device);
  g.first_alike = first_alike_blocks(*g.graph);
  return graphs_->by_shape.emplace(key, std::move(g)).first->second;
}

const Placement& SimEngine::placement_for(const Strategy& s) {
  const auto key = std::make_tuple(s.tp, s.pp, s.dp, s.cp, s.rank_order, s.ep, s.etp);
  auto it = placements_.find(key);
  if (it != placements_.end()) return it->second;
  const costmodel::RankGrid grid(s.dp, s.tp, s.pp, s.rank_order, s.cp);
  const int gpn = cluster_.gpus_per_node;
  Placement pl;
  pl.tp = costmodel::placed_group(grid, costmodel::Axis::Tp, gpn);
  pl.cp = costmodel::placed_group(grid, costmodel::Axis::Cp, gpn);
  if (s.cp == 1) {
    pl.dp = costmodel::placed_group(grid, costmodel::Axis::Dp, gpn);
  } else {
    // Gradients reduce over the dp x cp ranks that share a (tp, pp) coordinate; the worst
    // placed of those groups sets the time.
    bool first = true;
    std::vector<int> ranks;
    ranks.reserve(static_cast<std::size_t>(s.dp) * static_cast<std::size_t>(s.cp));
    for (int t = 0; t < s.tp; ++t)
      for (int p = 0; p < s.pp; ++p) {
        ranks.clear();
        for (int d = 0; d < s.dp; ++d)
          for (int c = 0; c < s.cp; ++c) ranks.push_back(grid.rank(costmodel::RankCoords{d, t, p, c}));
        const costmodel::PlacedGroup g = costmodel::placed_ranks(ranks, gpn);
        if (first || g.nodes_spanned > pl.dp.nodes_spanned ||
            (g.nodes_spanned == pl.dp.nodes_spanned &&
             g.ranks_per_node_in_group < pl.dp.ranks_per_node_in_group))
          pl.dp = g;
        first = false;
      }
  }
  pl.edp = pl.dp;
  // Expert groups whenever the model has experts: with ep = etp = 1 and tp > 1 the experts
  // are still replicated over all tp x cp x dp ranks of a stage (edp = tp x cp x dp). Each
  // group is placed on its own ranks: with cp > 1 an ep group folds over cp and dp ranks
  // (costmodel/expert_dispatch_cost.h), so it may span nodes that the tp and cp groups do not.
  if (model_.moe && costmodel::expert_folding_order(grid)) {
    using costmodel::ExpertAxis;
    pl.ep = costmodel::placed_expert_group(grid, s.ep, s.etp, ExpertAxis::Ep, gpn);
    pl.etp = costmodel::placed_expert_group(grid, s.ep, s.etp, ExpertAxis::Etp, gpn);
    pl.edp = costmodel::placed_expert_group(grid, s.ep, s.etp, ExpertAxis::Edp, gpn);
    pl.tp_ep = costmodel::placed_expert_group(grid, s.ep, s.etp, ExpertAxis::EtpEp, gpn);
  }
  if (s.pp > 1) {
    for (int p = 0; p + 1 < s.pp; ++p) pl.link.push_back(costmodel::placed_pp_pair(grid, p, gpn));
    pl.first_last = costmodel::placed_ranks(
        {grid.rank(costmodel::RankCoords{0, 0, s.pp - 1}), grid.rank(costmodel::RankCoords{0, 0, 0})},
        gpn);
    pl.link.push_back(pl.first_last);  // wrap-around link of interleaved schedules
  }
  return placements_.emplace(key, std::move(pl)).first->second;
}

const costmodel::PredictionBand& SimEngine::band_for(const Strategy& s) {
  auto it = bands_.find(s.gpus());
  if (it == bands_.end())
    it = bands_.emplace(s.gpus(), costmodel::prediction_band(
                                      stack_.name, cluster_.device.name,
                                      graph_for(s.micro_batch).graph->total_params() / 1e9,
                                      s.gpus(), model_.seq_len, cluster_.device.training_losses.present,
                                      model_.moe.has_value()))
             .first;
  return it->second;
}

// The cost-balanced split (StagePartition::balance); when the frameworks' stage flags cannot
// say it (neither even nor Megatron-LM's first / last counts: it would need a per-stage
// layout), Megatron-LM's first / last split instead if neither its most expensive virtual
// stage nor its busiest pipeline rank (all its chunks: with vpp > 1 a rank runs every chunk
// of every micro-batch) costs more: the same optimum, in flags every stack with them runs.
const std::vector<std::vector<int>>& SimEngine::partition_for(const Strategy& s,
                                                              const GroupCostTable& t) {
  const int stages = s.pp * s.vpp;
  const auto key = std::make_tuple(&t, s.pp, s.vpp, recompute_key(s));
  auto it = partitions_.find(key);
  if (it != partitions_.end()) return it->second;
  std::vector<double> cost(t.groups.size());
  const int layers = static_cast<int>(model_.layers);
  for (std::size_t g = 0; g < t.groups.size(); ++g) {
    double fc, ft, bc, bt;
    group_times(t.groups[g], static_cast<int>(g), layers, s, &fc, &ft, &bc, &bt);
    cost[g] = fc + ft + bc + bt;
  }
  StagePartition split = StagePartition::balance(cost, stages);
  if (s.pp > 1) {
    const std::vector<std::int64_t> blocks = blocks_per_stage(split.stages(), model_);
    const bool even = std::all_of(blocks.begin(), blocks.end(), [&](std::int64_t b) { return b == blocks[0]; });
    if (!even && !first_last_of(blocks, s.pp, s.vpp)) {
      StagePartition fl = StagePartition::first_last(cost, s.pp, s.vpp);
      const auto busiest_rank = [&](const StagePartition& p) {
        std::vector<double> rank(static_cast<std::size_t>(s.pp), 0.0);
        for (std::size_t v = 0; v < p.stage_costs().size(); ++v) rank[v % rank.size()] += p.stage_costs()[v];
        return *std::max_element(rank.begin(), rank.end());
      };
      if (!fl.stages().empty() && fl.max_cost() <= split.max_cost() * (1 + kSameMaxCost) &&
          busiest_rank(fl) <= busiest_rank(split) * (1 + kSameMaxCost))
        split = std::move(fl);
    }
  }
  return partitions_.emplace(key, split.stages()).first->second;
}

void SimEngine::require_cp_supported(const Strategy& s) const {
  if (s.cp > 1 && !stack_.flash_like())
    input_error("strategy.cp ({}) > 1 needs a flash / cuDNN attention kernel, but stack '{}' runs "
                "unfused attention (context parallel attention is built on the fused kernels)",
                s.cp, stack_.name);
}

// Why the bound holds: every rank's optimizer step (then its ZeRO-1/2 parameter
// all-gather) starts once the slowest rank is ready, which is no earlier than the end of
// its last compute step (run()); PipelineWalk::compute_end_bound bounds that end from the
// stage times (its comment has the proof, for extended walks too where the compiled
// schedules allow it). So iteration_s >= that bound + the largest optimizer step and gather.
Screening SimEngine::screen(const Strategy& s) {
  require_cp_supported(s);
  const Graph& gr = graph_for(s.micro_batch);
  const Placement& pl = placement_for(s);
  const GroupCostTable& t = costs_for(s, pl);
  const std::vector<std::vector<int>>& sl = partition_for(s, t);
  stage_times(s, pl, t, sl);
  const std::vector<costmodel::StageMemory> mem = memory(s, gr, sl, false);

  Screening out;
  const int pp = s.pp, vpp = s.vpp;
  const int m = static_cast<int>(s.num_microbatches());
  for (int p = 0; p < pp; ++p)  // as run() computes it
    out.peak_memory_gib = std::max(out.peak_memory_gib, mem[static_cast<std::size_t>(p)].total_bytes / kGiB);
  out.fits_memory = out.peak_memory_gib <= cluster_.device.memory_gib;

  const StageTimes& st = times_;
  // The estimate: (a) of PipelineWalk::compute_end_bound with all m micro-batches, for
  // extended walks too (an order, not a bound).
  double chains = 0, before_f = 0, after_b = 0;
  for (int p = 0; p < pp; ++p) {
    double busy = 0;
    for (int c = 0; c < vpp; ++c) busy += m * st.fwd[c * pp + p] + m * st.bwd[c * pp + p];
    chains = std::max(chains, before_f + busy + after_b);
    if (pp > 1) {
      before_f += st.fwd[p] + st.link[p];
      after_b += st.bwd[p] + st.link[p];
    }
  }
  const double bound = walk_->compute_end_bound(s.schedule, pp, m, vpp, st.fwd, st.bwd, st.link);
  const std::vector<double> fp8_w = fp8_weights_per_rank(s, t, sl);
  double after = 0;  // the optimizer step and parameter all-gather of the slowest rank
  for (int p = 0; p < pp; ++p) {
    const costmodel::StageMemory& mp = mem[static_cast<std::size_t>(p)];
    after = std::max(after, optimizer_s(s, mp, fp8_w[static_cast<std::size_t>(p)]) + param_gather_s(s, pl, mp));
  }
  out.estimate_s = chains + after;
  out.lower_bound_s = bound > 0 ? bound + after : 0.0;
  return out;
}

SimulationResult SimEngine::run(const Strategy& s, bool timeline,
                                const std::vector<std::vector<int>>& stage_layers_in) {
  require_cp_supported(s);
  const Graph& gr = graph_for(s.micro_batch);  // whole sequence: parameters and memory
  const Placement& pl = placement_for(s);
  const GroupCostTable& t = costs_for(s, pl);
  const int pp = s.pp, vpp = s.vpp, stages = pp * vpp;
  const int m = static_cast<int>(s.num_microbatches());

  SimulationResult res;
  res.ops = t.ops;
  if (stage_layers_in.empty()) {
    res.stage_layers = partition_for(s, t);
  } else {
    check_stage_layers(stage_layers_in, stages, static_cast<int>(t.groups.size()));
    res.stage_layers = stage_layers_in;
  }
  const auto& sl = res.stage_layers;

  stage_times(s, pl, t, sl);

  // Pipeline walk (reused when only ZeRO / DP-side settings changed).
  PipelineWalk& w = *walk_;
  if (!w.same_inputs(s.schedule, pp, m, vpp, times_.fwd, times_.bwd, times_.link, timeline))
    w.run(s.schedule, pp, m, vpp, times_.fwd, times_.bwd, times_.link, timeline);

  // Memory per pipeline rank.
  const std::vector<costmodel::StageMemory> mem = memory(s, gr, sl, timeline);

  std::vector<TimelineEvent> events;
  std::vector<TimelineEvent>* ev = timeline ? &events : nullptr;
  const GradientSync sync = reduce_gradients(s, pl, t, sl, mem, ev);
  const OptimizerPhase opt = optimizer_phase(s, pl, t, sl, mem, sync.ready[sync.last], ev);

  Prediction& pr = res.prediction;
  fill_throughput(s, opt.iteration_s, pr);
  fill_memory(s, mem, pr);
  fill_breakdown(s, sync, opt, pr);

  if (timeline) {
    record_pipeline_events(s, events);
    std::stable_sort(events.begin(), events.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
      return a.stage != b.stage ? a.stage < b.stage : a.start_s < b.start_s;
    });
    res.timeline = std::move(events);
  }
  return res;
}

// One pipeline rank's gradient buckets (ZeRO-0/1), in the order they become ready.
void SimEngine::grad_buckets(const Strategy& s, int p, const GradReduce& gr, const GroupCostTable& t,
                             const std::vector<std::vector<int>>& sl, const costmodel::StageMemory& mem,
                             std::vector<GradBucket>& buckets) const {
  const PipelineWalk& w = *walk_;
  const int layers = static_cast<int>(model_.layers);
  const int pp = s.pp, vpp = s.vpp;
  double stage_params = 0;
  buckets.clear();
  for (int c = 0; c < vpp; ++c) {
    const int v = c * pp + p;
    const int oi = w.last_backward(p, c);
    STRATA_CHECK(oi >= 0, "no backward for chunk {} on stage {}", c, p);
    const double op_start = w.op_start(oi), op_end = w.op_end(oi);
    // Groups finish in reverse order; durations in proportion to their backward time.
    double at = op_start, acc = 0, acc_expert = 0;
    const double scale = times_.bwd[v] > 0 ? (op_end - op_start) / times_.bwd[v] : 0.0;
    for (auto it = sl[v].rbegin(); it != sl[v].rend(); ++it) {
      double fc, ft, bc, bt;
      const auto i = static_cast<std::size_t>(std::distance(sl[v].begin(), it.base()) - 1);
      group_times(t.groups[*it], *it, layers, s, &fc, &ft, &bc, &bt, block_reruns(sl[v], i, layers, s));
      at += (bc + bt) * scale;
      acc += t.groups[*it].params_rank;
      acc_expert += t.groups[*it].expert_params_rank;
      stage_params += t.groups[*it].params_rank;
      if (acc >= gr.bucket_params) {
        buckets.push_back(GradBucket{at, acc, p, c, acc_expert});
        acc = 0;
        acc_expert = 0;
      }
    }
    if (acc > 0) buckets.push_back(GradBucket{op_end, acc, p, c, acc_expert});
  }
  if (!gr.overlap) {  // one reduction of everything once the stage's backward is done
    double all = 0, all_expert = 0;
    for (const GradBucket& b : buckets) all += b.params, all_expert += b.expert_params;
    buckets.assign(1, GradBucket{w.compute_end[p], all, p, 0, all_expert});
  }
  // The tied embedding copy on the last stage reduces with the last bucket.
  if (!buckets.empty() && mem.params > stage_params) buckets.back().params += mem.params - stage_params;
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const GradBucket& a, const GradBucket& b) { return a.ready < b.ready; });
}

// DP gradient reduction, per pipeline rank, over the dp x cp ranks (pl.dp), then the tied
// embedding's sync: when each rank's gradients are ready, and the last one (it gates the
// optimizer).
SimEngine::GradientSync SimEngine::reduce_gradients(const Strategy& s, const Placement& pl,
                                                    const GroupCostTable& t,
                                                    const std::vector<std::vector<int>>& sl,
                                                    const std::vector<costmodel::StageMemory>& mem,
                                                    std::vector<TimelineEvent>* events) {
  const PipelineWalk& w = *walk_;
  const int pp = s.pp;
  const GradReduce gr = grad_reduce(s, pl);
  GradientSync out;
  out.ready.assign(static_cast<std::size_t>(pp), 0.0);
  std::vector<double>& ready = out.ready;
  std::vector<double> dp_end(pp, 0.0), slowdown(pp, 0.0);
  std::vector<GradBucket> buckets;
  for (int p = 0; p < pp; ++p) {
    // ZeRO-2/3 reduced every micro-batch's gradients inside the backward (step_costs.cpp).
    if (gr.active && s.zero <= 1) {
      grad_buckets(s, p, gr, t, sl, mem[p], buckets);
      // `delay`: compute time lost so far to the SMs of the reductions running beside it;
      // it postpones the later buckets and the end of the backward alike.
      double stream = 0, delay = 0;
      for (std::size_t k = 0; k < buckets.size(); ++k) {
        const double start = std::max(stream, buckets[k].ready + delay);
        const double dense_params = buckets[k].params - buckets[k].expert_params;
        stream = start + dense_grads_reduce_s(gr, pl, dense_params) +
                 expert_grads_reduce_s(gr, pl, buckets[k].expert_params);
        delay += gr.sm_share * std::max(0.0, std::min(stream, w.compute_end[p] + delay) - start);
        if (events)
          events->push_back(TimelineEvent{p, "dp_comm",
                                          fmt::format("{} bucket {}",
                                                      s.zero >= 1 ? "reduce-scatter" : "all-reduce", k),
                                          -1, buckets[k].chunk, start, stream});
      }
      dp_end[p] = stream;
      slowdown[p] = delay;
    }
    ready[p] = std::max(w.compute_end[p] + slowdown[p], dp_end[p]);
  }
  if (model_.tied_embeddings && pp > 1) {
    const double t_sync = embedding_grad_sync_s(s, pl);
    const double start = std::max(ready[0], ready[pp - 1]);
    for (int p : {0, pp - 1}) {
      if (events && t_sync > 0)
        events->push_back(TimelineEvent{p, "dp_comm", "embedding grad all-reduce", -1, 0, start,
                                        start + t_sync});
      ready[p] = start + t_sync;
    }
  }
  int q = 0;
  for (int p = 1; p < pp; ++p)
    if (ready[p] > ready[q]) q = p;
  out.last = q;
  return out;
}

// Optimizer (+ ZeRO-1 parameter all-gather) of every pipeline rank from `sync` on; the
// iteration ends with the last one.
SimEngine::OptimizerPhase SimEngine::optimizer_phase(const Strategy& s, const Placement& pl,
                                                     const GroupCostTable& t,
                                                     const std::vector<std::vector<int>>& sl,
                                                     const std::vector<costmodel::StageMemory>& mem,
                                                     double sync, std::vector<TimelineEvent>* events) const {
  const std::vector<double> fp8_weights_rank = fp8_weights_per_rank(s, t, sl);
  OptimizerPhase out;
  for (int p = 0; p < s.pp; ++p) {
    const double opt = optimizer_s(s, mem[p], fp8_weights_rank[static_cast<std::size_t>(p)]);
    const double ag = param_gather_s(s, pl, mem[p]);
    const double end = sync + opt + ag;
    if (events) {
      events->push_back(TimelineEvent{p, "optimizer", "adam step", -1, 0, sync, sync + opt});
      if (ag > 0)
        events->push_back(TimelineEvent{p, "dp_comm", "param all-gather", -1, 0, sync + opt, end});
    }
    if (end > out.iteration_s || p == 0) {
      out.iteration_s = end;
      out.optimizer_s = opt;
      out.param_gather_s = ag;
    }
  }
  return out;
}

// The stack, the uncertainty band, and the throughput figures of an iteration.
void SimEngine::fill_throughput(const Strategy& s, double iteration, Prediction& pr) {
  pr.stack = stack_.name;
  pr.precision = costmodel::to_string(stack_.precision);
  {
    const costmodel::PredictionBand& band = band_for(s);
    pr.uncertainty = band.relative.value_or(-1.0);
    pr.uncertainty_low = band.low;
    pr.uncertainty_high = band.high;
    pr.uncertainty_basis = band.basis;
  }
  // Every rank waits for the slowest at the step's synchronisations: the expected maximum
  // of the ranks' jittery step times (costmodel/training_losses.h jitter_cv).
  const double straggler =
      costmodel::straggler_s(iteration, s.gpus(), cluster_.device.training_losses.jitter_cv());
  iteration += straggler;
  pr.breakdown_s.straggler = straggler;
  pr.iteration_s = iteration;
  const double tokens = static_cast<double>(s.global_batch) * static_cast<double>(model_.seq_len);
  pr.tokens_per_s = iteration > 0 ? tokens / iteration : 0;
  const double mbs_total = static_cast<double>(s.global_batch) / static_cast<double>(s.micro_batch);
  const double gpus = static_cast<double>(s.gpus());
  const double model_flops = times_.model_flops_mb * mbs_total;
  const double hw_flops = times_.executed_flops_mb * mbs_total;
  pr.model_tflops_per_gpu = iteration > 0 ? model_flops / iteration / gpus / 1e12 : 0;
  pr.hardware_tflops_per_gpu = iteration > 0 ? hw_flops / iteration / gpus / 1e12 : 0;
  const double peak = cluster_.device.peak_flops(dtype_);
  pr.mfu = peak > 0 ? pr.model_tflops_per_gpu * 1e12 / peak : 0;
}

// Memory per pipeline rank, and the breakdown of the rank that needs the most.
void SimEngine::fill_memory(const Strategy& s, const std::vector<costmodel::StageMemory>& mem,
                            Prediction& pr) const {
  const PipelineWalk& w = *walk_;
  const int pp = s.pp;
  pr.stage_memory_gib.resize(pp);
  pr.peak_memory_gib = 0;
  for (int p = 0; p < pp; ++p) {
    pr.stage_memory_gib[p] = mem[p].total_bytes / kGiB;
    if (pr.stage_memory_gib[p] > pr.peak_memory_gib || p == 0) {
      const costmodel::StageMemory& sm = mem[p];
      pr.peak_memory = MemoryBreakdown{p,
                                       sm.weights_bytes / kGiB,
                                       sm.grads_bytes / kGiB,
                                       sm.optimizer_bytes / kGiB,
                                       sm.activations_bytes / kGiB,
                                       sm.logits_bytes / kGiB,
                                       sm.reserve_bytes / kGiB,
                                       w.peak_chunks.empty() ? 0 : w.peak_chunks[p]};
      pr.peak_memory.expert_weights = sm.expert_weights_bytes / kGiB;
      pr.peak_memory.expert_grads_optimizer = sm.expert_grads_optimizer_bytes / kGiB;
      pr.peak_memory.dispatch_activations = sm.dispatch_activations_bytes / kGiB;
      pr.peak_memory.mtp = sm.mtp_activations_bytes / kGiB;
      pr.peak_memory.step_grad_copy = sm.step_grad_copy_bytes / kGiB;
      pr.peak_memory.step_extra = sm.step_extra_bytes / kGiB;
      pr.peak_memory.recompute_layer = sm.recompute_layer_bytes / kGiB;
    }
    pr.peak_memory_gib = std::max(pr.peak_memory_gib, pr.stage_memory_gib[p]);
  }
  pr.fits_memory = pr.peak_memory_gib <= cluster_.device.memory_gib;
}

// Critical-path attribution (see the top of this file).
void SimEngine::fill_breakdown(const Strategy& s, const GradientSync& sync, const OptimizerPhase& opt,
                               Prediction& pr) const {
  const PipelineWalk& w = *walk_;
  const StageTimes& st = times_;
  const int pp = s.pp, vpp = s.vpp, q = sync.last;
  const int m = static_cast<int>(s.num_microbatches());
  Breakdown& bd = pr.breakdown_s;
  // The stage whose steps are read: the busiest one, b, when it is busier than q and done
  // computing no later (then q's compute end = b's busy time + the rest, all of it waiting
  // on receives or on the stages after b); q otherwise. On uneven stages (DeepSeek-V3's 3
  // dense blocks on the first rank, 4 MoE blocks on the others) q's own steps would show a
  // light stage idle most of the step, the bottleneck's all-to-all hidden in its bubble.
  const auto busy = [&](int p) { return w.busy_fwd[static_cast<std::size_t>(p)] + w.busy_bwd[static_cast<std::size_t>(p)]; };
  int b = q;
  for (int p = 0; p < pp; ++p)
    if (busy(p) > busy(b) && w.compute_end[static_cast<std::size_t>(p)] <= w.compute_end[static_cast<std::size_t>(q)]) b = p;
  double tp_b = 0, p2p_b = 0, cp_b = 0, zero_b = 0, ep_b = 0, host_b = 0;
  for (int c = 0; c < vpp; ++c) {
    zero_b += m * (st.fwd_zero[c * pp + b] + st.bwd_zero[c * pp + b]);
    tp_b += m * (st.fwd_tp[c * pp + b] + st.bwd_tp[c * pp + b]);
    cp_b += m * (st.fwd_cp[c * pp + b] + st.bwd_cp[c * pp + b]);
    p2p_b += m * (st.p2p_fwd[c * pp + b] + st.p2p_bwd[c * pp + b]);
    ep_b += m * (st.ep_fwd[c * pp + b] + st.ep_bwd[c * pp + b]);
    host_b += m * (st.host_fwd[c * pp + b] + st.host_bwd[c * pp + b]);
  }
  bd.ep_comm = ep_b;
  bd.tp_comm = tp_b - ep_b;
  bd.cp_comm = cp_b;
  bd.host_wait = host_b;
  bd.compute = busy(b) - tp_b - p2p_b - cp_b - zero_b - host_b;
  const double idle_b = w.idle[static_cast<std::size_t>(b)];
  // >= idle_b, as b is done computing no later than q (rounding aside: hence the max)
  const double waits = b == q ? idle_b : std::max(idle_b, w.compute_end[static_cast<std::size_t>(q)] - busy(b));
  bd.pp_comm = (pp > 1 ? std::min(idle_b, w.chain_p2p(b)) : 0.0) + p2p_b;
  bd.bubble = waits - (bd.pp_comm - p2p_b);
  bd.dp_comm = (sync.ready[q] - w.compute_end[q]) + opt.param_gather_s + zero_b;  // + ZeRO-2/3 in the steps
  bd.optimizer = opt.optimizer_s;
  pr.bubble_fraction = pr.iteration_s > 0 ? bd.bubble / pr.iteration_s : 0;
}

// The pipeline walk's compute steps and p2p messages as timeline events.
// A step's exposed expert all-to-all (ep or etp > 1) and context-parallel K/V exchange
// (cp > 1) are part of its compute block, the stage waiting on them (group_times); each
// gets an event of its own on the ep_comm / cp_comm lane, as long as its share of the block
// and drawn from the block's start: the walk does not order the layers inside a step, so
// the lane shows how much of the step is the exchange, not where in it each layer's part
// falls. Summed over a stage's steps they are the breakdown's ep_comm and cp_comm.
void SimEngine::record_pipeline_events(const Strategy& s, std::vector<TimelineEvent>& events) const {
  const PipelineWalk& w = *walk_;
  const StageTimes& st = times_;
  const bool ep_lane = s.ep > 1 || s.etp > 1, cp_lane = s.cp > 1;  // trace_event_estimate counts on these
  for (std::size_t i = 0; i < w.num_ops(); ++i) {
    const auto& l = w.label(i);
    const int stage = w.op(i).stage;
    const std::string step = fmt::format("{} m{} c{}", l.forward ? "F" : "B", l.mb, l.chunk);
    const double start = w.op_start(i), end = w.op_end(i);
    events.push_back(TimelineEvent{stage, "compute", step, l.mb, l.chunk, start, end});
    const auto v = static_cast<std::size_t>(l.chunk * s.pp + stage);
    auto lane = [&](const char* stream, const char* what, double part_s) {
      if (part_s <= 0) return;
      events.push_back(TimelineEvent{stage, stream, fmt::format("{} {}", what, step), l.mb, l.chunk, start,
                                     std::min(end, start + part_s)});
    };
    if (ep_lane) lane("ep_comm", "all-to-all", l.forward ? st.ep_fwd[v] : st.ep_bwd[v]);
    if (cp_lane) lane("cp_comm", "K/V exchange", l.forward ? st.fwd_cp[v] : st.bwd_cp[v]);
  }
  for (std::size_t i = 0; i < w.num_msgs(); ++i) {
    const auto& mi = w.msg(i);
    const auto src = static_cast<std::size_t>(mi.src_op);
    const auto& l = w.label(src);
    events.push_back(TimelineEvent{w.op(src).stage, "pp_comm",
                                   fmt::format("send {} m{}", mi.activation ? "act" : "grad", l.mb),
                                   l.mb, l.chunk, w.msg_start(i), w.msg_end(i)});
  }
}

}  // namespace detail

std::shared_ptr<SimulationGraphs> make_simulation_graphs() { return std::make_shared<SimulationGraphs>(); }

SimulationResult simulate(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                          const Strategy& asked, const SimulateOptions& options) {
  const StageSplit split = options.stage_layers.empty() ? StageSplit::Strata : StageSplit::Given;
  require_valid(asked, model, split);
  detail::SimEngine engine(model, cluster, options.stack, asked.precision);
  const Strategy strategy = with_stack_recompute(asked, engine.stack());
  if (strategy.recompute_modules != asked.recompute_modules) require_valid(strategy, model, split);
  if (const std::string why = detail::too_large_to_simulate(strategy); !why.empty())
    throw InputError(why);
  if (strategy.gpus() > cluster.total_gpus())
    input_error("strategy uses {} GPUs (dp {} x tp {} x pp {} x cp {}) but cluster {} has {} ({} "
                "nodes x {})",
                strategy.gpus(), strategy.dp, strategy.tp, strategy.pp, strategy.cp, cluster.name,
                cluster.total_gpus(), cluster.nodes, cluster.gpus_per_node);
  if (const std::string why = stack_refusal(strategy, engine.stack()); !why.empty()) throw InputError(why);
  engine.record_ops(options.op_costs);
  engine.share_graphs(options.graphs);
  SimulationResult r = engine.run(strategy, options.timeline, options.stage_layers);
  r.prediction.notes = engine.notes(strategy);
  if (auto w = costmodel::mfu_warning(cluster.device.name, r.prediction.mfu, r.prediction.uncertainty_high,
                                        engine.fp8()); !w.empty())
    r.prediction.notes.push_back(w);
  return r;
}

}  // namespace strata::planner