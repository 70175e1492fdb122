#include "runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.h"
#include "runtime/matmul.h"

namespace strata::runtime {

namespace {

std::string stage_layers_string(const std::vector<std::vector<int>>& s) {
  std::string out;
  for (const auto& v : s) {
    out += out.empty() ? "[" : ",[";
    out += fmt::format("{}", fmt::join(v, ","));
    out += "]";
  }
  return out;
}

// Activation buffers are allocated and freed per micro-batch. glibc serves blocks above
// its mmap threshold with fresh pages and returns freed heap tops to the kernel, so every
// micro-batch paid page faults and zeroing (about a tenth of a CPU step). Keep freed
// memory in the process instead: the peak is the same, the faults happen once.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest allowed threshold on 64-bit
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace

Trainer::Trainer(const planner::Plan& plan, const TrainConfig& cfg, ProcessGrid& grid)
    : plan_(plan), cfg_(cfg), grid_(grid), run_id_(cfg.run_id) {
  keep_freed_memory();
  const planner::Strategy& s = plan.strategy;
  planner::require_valid(s, plan.model);
  const auto coords = grid.coords();
  if (cfg.steps < 0) input_error("--steps ({}) must be >= 0", cfg.steps);
  const int virtual_stages = s.pp * s.vpp;
  if (static_cast<int>(plan.stage_layers.size()) != virtual_stages)
    input_error("plan stage_layers has {} entries but strategy.pp x strategy.vpp = {}",
                plan.stage_layers.size(), virtual_stages);

  if (grid.ep_size() != s.ep || grid.etp_size() != s.etp)
    input_error("the process grid has ep {}, etp {} but the strategy has ep {}, etp {}", grid.ep_size(),
                grid.etp_size(), s.ep, s.etp);
  dims_ = make_model_dims(plan.model, s.micro_batch, s.tp, coords.tp, s.sequence_parallel,
                          s.recompute, s.cp, coords.cp, s.ep, grid.ep_rank(), s.etp, grid.etp_rank());
  ep_ = EpGroup{s.ep > 1 ? &grid.ep() : nullptr, s.ep, grid.ep_rank(),
                EtpGroup{s.etp > 1 ? &grid.etp() : nullptr, s.etp, grid.etp_rank()}};
  if (s.cp > 1) cp_ = CpGroup{&grid.cp(), s.cp, coords.cp, cfg.cp_kv_exchange};
  // Gradients are summed, and ZeRO shards split, over dp x cp (each CP rank's gradient
  // holds its tokens' part).
  const int dp_cp = s.dp * s.cp;
  tp_ = TpGroup{s.tp > 1 ? &grid.tp() : nullptr, s.tp, coords.tp, dims_.sequence_parallel};
  const int layers = static_cast<int>(plan.model.layers);

  // This rank's chunks: virtual stages c * pp + stage.
  std::vector<ChunkLayout> layouts;
  for (int c = 0; c < s.vpp; ++c) {
    const auto v = static_cast<std::size_t>(c * s.pp + coords.pp);
    layouts.push_back(chunk_layout(plan.stage_layers[v], layers));
    holds_embedding_ |= layouts.back().embedding;
    holds_head_ |= layouts.back().head;
    for (const auto& spec : ModelChunk<float>::param_specs(dims_, layouts.back())) {
      if (spec.expert) {
        experts_.add(spec);
        ++expert_grad_uses_[spec.name];
        continue;
      }
      store_.add(spec);
      ++grad_uses_[spec.name];
    }
  }
  const int dp_cp_rank = dp_cp > 1 ? grid.dp_cp().rank() : 0;
  store_.finalize(s.zero >= 1 ? static_cast<std::size_t>(dp_cp) : 1,
                  DistributedOptimizer::sharding_for(s.zero, dp_cp, dp_cp_rank));
  store_.init(cfg.seed);
  // Routed experts: their own store, sharded like the rest but over the expert data-parallel
  // group (ZeRO-1 optimizer state, ZeRO-2 + gradients, ZeRO-3 + parameters, as Megatron-FSDP
  // shards expert parameters over its expert data-parallel group).
  const int edp = s.edp();
  const int edp_rank = edp > 1 ? grid.edp().rank() : 0;
  experts_.finalize(s.zero >= 1 ? static_cast<std::size_t>(edp) : 1,
                    DistributedOptimizer::sharding_for(s.zero, edp, edp_rank));
  experts_.init(cfg.seed);
  std::vector<ModelChunk<float>*> raw;
  for (const auto& l : layouts) {
    chunks_.push_back(std::make_unique<ModelChunk<float>>(dims_, l, store_, tp_, cp_, &experts_, ep_));
    raw.push_back(chunks_.back().get());
  }
  executor_ = std::make_unique<PipelineExecutor>(raw, s.pp > 1 ? &grid.pp() : nullptr);
  if (cfg.grad_bucket_params < 0)
    input_error("--grad-bucket-params ({}) must be >= 1 (or 0 for the default)", cfg.grad_bucket_params);
  GradReduction reduction;
  reduction.bucket_floats = static_cast<std::size_t>(
      cfg.grad_bucket_params > 0 ? cfg.grad_bucket_params : planner::default_grad_bucket_params(s.dp));
  if (s.zero >= 1 && dims_.tied() && grid.embedding() != nullptr && store_.contains("embedding.wte"))
    reduction.held_back.insert("embedding.wte");
  if (experts_.size() > 0) {
    GradReduction expert_reduction;
    expert_reduction.bucket_floats = reduction.bucket_floats;
    expert_optimizer_ = std::make_unique<DistributedOptimizer>(experts_, edp > 1 ? &grid.edp() : nullptr, s.zero,
                                                               cfg.adamw, std::move(expert_reduction));
  }
  optimizer_ = std::make_unique<DistributedOptimizer>(store_, dp_cp > 1 ? &grid.dp_cp() : nullptr,
                                                      s.zero, cfg.adamw, std::move(reduction));
  // ZeRO-2/3: components made resident around their passes, the dense parameters over
  // dp x cp and the routed experts over edp (either one may have a single rank).
  auto sharding = [&](DistributedOptimizer* o) -> DistributedOptimizer* {
    if (o == nullptr || !(o->shards_params() || o->shards_grads())) return nullptr;
    o->set_prefetch(cfg.zero_prefetch);
    return o;
  };
  DistributedOptimizer* dense_residency = sharding(optimizer_.get());
  DistributedOptimizer* expert_residency = sharding(expert_optimizer_.get());
  if (dense_residency != nullptr || expert_residency != nullptr)
    for (auto& c : chunks_) c->set_residency(dense_residency, expert_residency);
  schedule_ = planner::build_schedule(s.schedule, s.pp, coords.pp,
                                      static_cast<int>(s.num_microbatches()), s.vpp);

  // Every parameter of the model in a fixed order (names do not depend on the TP rank;
  // every routed expert listed, as on one expert-parallel rank).
  std::set<std::string> seen;
  ModelDims all_experts = dims_;
  all_experts.ep = 1;
  all_experts.ep_rank = 0;
  all_experts.etp = 1;
  all_experts.etp_rank = 0;
  for (int v = 0; v < virtual_stages; ++v)
    for (const auto& spec : ModelChunk<float>::param_specs(
             all_experts, chunk_layout(plan.stage_layers[static_cast<std::size_t>(v)], layers)))
      if (seen.insert(spec.name).second) global_names_.push_back(spec.name);

  switch (cfg.data) {
    case DataKind::Synthetic:
      data_ = std::make_unique<DataLoader>(DataLoader::synthetic(plan.model.vocab, plan.model.seq_len, cfg.seed));
      break;
    case DataKind::TokenFile:
      data_ = std::make_unique<DataLoader>(DataLoader::token_file(cfg.data_path, plan.model.vocab, plan.model.seq_len, cfg.seed));
      break;
    case DataKind::TextFile:
      data_ = std::make_unique<DataLoader>(DataLoader::text_file(cfg.data_path, plan.model.vocab, plan.model.seq_len, cfg.seed));
      break;
  }
}

Trainer::~Trainer() = default;

std::int64_t Trainer::tokens_per_step() const {
  return plan_.strategy.global_batch * plan_.model.seq_len;
}

void Trainer::sync_model_parallel_grads() {
  // Sequence parallelism: replicated parameters fed by this rank's tokens only.
  // (Sharded gradients: the kept shard of each; TP peers keep the same shard.)
  if (dims_.sequence_parallel) {
    std::vector<float>& g = store_.grads();
    const std::size_t g_lo = store_.kept_begin(StorePart::Grads), g_hi = g_lo + g.size();
    std::vector<std::pair<std::size_t, std::size_t>> parts;  // kept-buffer ranges
    for (const auto& e : store_.entries()) {
      const std::size_t lo = std::max(e.offset, g_lo), hi = std::min(e.offset + e.numel, g_hi);
      if (e.spec.sp_partial_grad && lo < hi) parts.emplace_back(lo - g_lo, hi - g_lo);
    }
    std::vector<float> packed;
    for (const auto& [lo, hi] : parts)
      packed.insert(packed.end(), g.begin() + static_cast<std::ptrdiff_t>(lo), g.begin() + static_cast<std::ptrdiff_t>(hi));
    tp::all_reduce_sum(tp_, packed.data(), packed.size());
    std::size_t at = 0;
    for (const auto& [lo, hi] : parts) {
      std::copy_n(packed.begin() + static_cast<std::ptrdiff_t>(at), hi - lo, g.begin() + static_cast<std::ptrdiff_t>(lo));
      at += hi - lo;
    }
  }
  // Tied embeddings across pipeline stages: the first stage's lookup gradient and the
  // last stage's LM-head gradient are two halves of one parameter's gradient (whole on
  // this rank until reduce_held_back(), ZeRO-2/3 included).
  if (dims_.tied() && grid_.embedding() != nullptr && store_.contains("embedding.wte")) {
    const auto& e = store_.entry("embedding.wte");
    grid_.embedding()->all_reduce_sum(store_.grad("embedding.wte"), e.numel);
  }
}

StepStats Trainer::train_step() {
  const auto t0 = std::chrono::steady_clock::now();
  gemm_counter() = GemmCounter{};
  const planner::Strategy& s = plan_.strategy;
  const auto coords = grid_.coords();
  const auto S = static_cast<std::size_t>(plan_.model.seq_len);
  const std::size_t Sl = dims_.seq;  // this rank's tokens of a sequence (S / cp)
  std::vector<std::int32_t> sample_tokens(S), sample_targets(S);
  const std::int64_t per_dp = s.global_batch / s.dp;
  const std::int64_t first_sample = step_ * s.global_batch + coords.dp * per_dp;

  store_.zero_grads();
  const MicroBatchFn data = [&](int mb, std::vector<std::int32_t>& tokens,
                                std::vector<std::int32_t>& targets) {
    const auto B = static_cast<std::size_t>(s.micro_batch);
    tokens.resize(B * Sl);
    targets.resize(B * Sl);
    for (std::size_t i = 0; i < B; ++i) {
      const std::int64_t index = first_sample + mb * s.micro_batch + static_cast<std::int64_t>(i);
      if (Sl == S) {
        data_->sample(index, tokens.data() + i * S, targets.data() + i * S);
        continue;
      }
      // Context parallel: this rank's two chunks of the sequence.
      data_->sample(index, sample_tokens.data(), sample_targets.data());
      for (std::size_t t = 0; t < Sl; ++t) {
        tokens[i * Sl + t] = sample_tokens[dims_.position(t)];
        targets[i * Sl + t] = sample_targets[dims_.position(t)];
      }
    }
  };
  const float token_weight = 1.0f / static_cast<float>(tokens_per_step());
  experts_.zero_grads();
  optimizer_->begin_reduction(grad_uses_);
  if (expert_optimizer_) expert_optimizer_->begin_reduction(expert_grad_uses_);
  ParamsDoneFn grads_final;
  if (cfg_.overlap_grad_reduce)
    grads_final = [this](const std::vector<ParamSpec>& specs) {
      for (const ParamSpec& spec : specs)
        (spec.expert ? *expert_optimizer_ : *optimizer_).grads_ready(spec.name);
    };
  const double local_loss = executor_->run(schedule_, data, token_weight, grads_final);

  const auto w0 = std::chrono::steady_clock::now();
  if (expert_optimizer_) expert_optimizer_->finish_reduction();
  optimizer_->finish_reduction();
  const auto w1 = std::chrono::steady_clock::now();
  sync_model_parallel_grads();
  const auto w2 = std::chrono::steady_clock::now();
  optimizer_->reduce_held_back();
  const auto w3 = std::chrono::steady_clock::now();
  const double dp_wait_s = std::chrono::duration<double>((w1 - w0) + (w3 - w2)).count();

  // Squared norm of every parameter's full gradient: each part counted once (TP shards
  // by every TP rank, replicated parameters by TP rank 0; DP copies by DP rank 0 or, with
  // ZeRO-1, each shard by its owner; the tied copy on the last stage not at all), plus
  // the loss in the last slot (summed over DP from the head-holding TP rank 0).
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < global_names_.size(); ++i) index[global_names_[i]] = i;
  std::vector<float> sums(global_names_.size() + 1, 0.0f);
  const bool count_dp = s.zero >= 1 || (coords.dp == 0 && coords.cp == 0);
  const std::size_t g_lo = store_.kept_begin(StorePart::Grads);
  for (const auto& e : store_.entries()) {
    if (e.spec.name == "embedding.wte" && !holds_embedding_) continue;
    if (!count_dp || (!e.spec.tp_sharded && coords.tp != 0)) continue;
    const std::size_t lo = std::max(optimizer_->owned_begin(), e.offset);
    const std::size_t hi = std::min(optimizer_->owned_end(), e.offset + e.numel);
    double acc = 0;
    for (std::size_t i = lo; i < hi; ++i) {
      const double g = store_.grads()[i - g_lo];
      acc += g * g;
    }
    sums[index.at(e.spec.name)] += static_cast<float>(acc);
  }
  // Routed experts: each held by one ep rank; its edp copies counted once (edp rank 0, or
  // with ZeRO-1 each shard by its owner).
  if (expert_optimizer_ && (s.zero >= 1 || grid_.edp().rank() == 0))  // each etp slice by its own rank
    for (const auto& e : experts_.entries()) {
      const std::size_t lo = std::max(expert_optimizer_->owned_begin(), e.offset);
      const std::size_t hi = std::min(expert_optimizer_->owned_end(), e.offset + e.numel);
      double acc = 0;
      const std::size_t e_lo = experts_.kept_begin(StorePart::Grads);  // the kept shard under ZeRO-2/3
      for (std::size_t i = lo; i < hi; ++i) {
        const double g = experts_.grads()[i - e_lo];
        acc += g * g;
      }
      sums[index.at(e.spec.name)] += static_cast<float>(acc);
    }
  if (holds_head_ && coords.tp == 0) sums.back() = static_cast<float>(local_loss);
  grid_.world().all_reduce_sum(sums.data(), sums.size());
  double total = 0;
  norms_.clear();
  for (std::size_t i = 0; i < global_names_.size(); ++i) {
    total += sums[i];
    norms_.emplace_back(global_names_[i], std::sqrt(static_cast<double>(sums[i])));
  }
  const double grad_norm = std::sqrt(total);
  // A non-finite loss or norm means the run diverged: stop before the optimizer applies
  // it (every rank holds the same reduced values, so every rank stops here).
  if (!std::isfinite(grad_norm) || !std::isfinite(sums.back()))
    throw TrainingDiverged(fmt::format(
        "step {}: the {} is {}: training diverged (lower --lr, check --data); stopped before "
        "the optimizer step, no checkpoint of it was written",
        step_ + 1, std::isfinite(sums.back()) ? "gradient norm" : "loss",
        std::isfinite(sums.back()) ? grad_norm : static_cast<double>(sums.back())));
  float scale = 1.0f;
  if (cfg_.grad_clip > 0 && grad_norm > cfg_.grad_clip)
    scale = static_cast<float>(cfg_.grad_clip / (grad_norm + 1e-6));
  const double lr = cfg_.lr_schedule.at(step_ + 1, cfg_.adamw.lr);
  optimizer_->set_lr(lr);
  optimizer_->step(step_ + 1, scale);
  if (expert_optimizer_) {
    expert_optimizer_->set_lr(lr);
    expert_optimizer_->step(step_ + 1, scale);
  }
  ++step_;

  const auto t1 = std::chrono::steady_clock::now();
  StepStats st;
  st.step = step_;
  st.loss = sums.back();
  st.grad_norm = grad_norm;
  st.lr = lr;
  st.step_s = std::chrono::duration<double>(t1 - t0).count();
  st.tokens_per_s = st.step_s > 0 ? static_cast<double>(tokens_per_step()) / st.step_s : 0;
  st.gemm_s = gemm_counter().seconds;
  st.dp_wait_s = dp_wait_s;
  return st;
}

CheckpointIdentity Trainer::identity() const {
  const planner::Strategy& s = plan_.strategy;
  CheckpointIdentity id = {
      {"model", models::to_yaml(plan_.model)},
      {"dp", std::to_string(s.dp)},
      {"tp", std::to_string(s.tp)},
      {"pp", std::to_string(s.pp)},
      {"vpp", std::to_string(s.vpp)},
      {"zero", std::to_string(s.zero)},
      {"rank_order", s.rank_order},
      {"stage_layers", stage_layers_string(plan_.stage_layers)},
      {"global_batch", std::to_string(s.global_batch)},
      {"seed", std::to_string(cfg_.seed)},
      {"world_size", std::to_string(grid_.world_size())},
  };
  // Recorded only with context parallel, so checkpoints from before the cp axis still
  // load (cp follows from world_size / (dp tp pp) anyway).
  if (s.cp > 1) id.emplace_back("cp", std::to_string(s.cp));
  // Likewise expert parallel: which experts each rank's shard holds.
  if (s.ep > 1) id.emplace_back("ep", std::to_string(s.ep));
  if (s.etp > 1) id.emplace_back("etp", std::to_string(s.etp));
  return id;
}

RankMemory Trainer::memory() const {
  // The dense store and the routed experts' store (sharded over edp), added up; their
  // gathered peaks are added too (an upper bound: the two may peak at different times).
  const auto use = store_.memory(), experts = experts_.memory();
  RankMemory m;
  m.params_bytes = use.param_kept_bytes + experts.param_kept_bytes;
  m.grads_bytes = use.grad_kept_bytes + experts.grad_kept_bytes;
  m.optimizer_bytes = optimizer_->optimizer_bytes() + (expert_optimizer_ ? expert_optimizer_->optimizer_bytes() : 0);
  m.peak_gathered_params_bytes = use.peak_param_slab_bytes + experts.peak_param_slab_bytes;
  m.peak_gathered_grads_bytes = use.peak_grad_slab_bytes + experts.peak_grad_slab_bytes;
  m.peak_total_bytes = use.peak_total_bytes + experts.peak_total_bytes + m.optimizer_bytes;
  return m;
}

std::size_t Trainer::grad_buckets() const {
  if (plan_.strategy.dp * plan_.strategy.cp == 1) return 0;
  if (!optimizer_->shards_grads()) return optimizer_->bucket_count();
  std::size_t components = 0;  // one reduce-scatter per component and micro-batch
  for (const auto& c : chunks_)
    components += (c->layout().embedding ? 1 : 0) + c->layout().blocks.size() + (c->layout().head ? 1 : 0);
  return components;
}

void Trainer::save_checkpoint() {
  // Parameters that overflowed (a huge learning rate) are not saved: all ranks agree.
  // (The kept parameters: all of them, or the owned shard under ZeRO-3.)
  float bad = 0;
  for (float p : store_.params())
    if (!std::isfinite(p)) {
      bad = 1;
      break;
    }
  for (const float v : experts_.params())
    if (!std::isfinite(v)) {
      bad = 1;
      break;
    }
  grid_.world().all_reduce_sum(&bad, 1);
  if (bad > 0)
    throw TrainingDiverged(fmt::format(
        "step {}: {} rank{} non-finite parameters: training diverged (lower --lr); the "
        "checkpoint of step {} was not written",
        step_, static_cast<int>(bad), bad > 1 ? "s hold" : " holds", step_));
  CheckpointShard shard;
  shard.step = step_;
  shard.run_id = run_id_;
  shard.params = store_.params();
  shard.exp_avg = optimizer_->exp_avg();
  shard.exp_avg_sq = optimizer_->exp_avg_sq();
  if (expert_optimizer_) {  // this rank's routed experts after the rest
    shard.params.insert(shard.params.end(), experts_.params().begin(), experts_.params().end());
    shard.exp_avg.insert(shard.exp_avg.end(), expert_optimizer_->exp_avg().begin(), expert_optimizer_->exp_avg().end());
    shard.exp_avg_sq.insert(shard.exp_avg_sq.end(), expert_optimizer_->exp_avg_sq().begin(),
                            expert_optimizer_->exp_avg_sq().end());
  }
  write_checkpoint(grid_.world(), cfg_.checkpoint_dir, identity(), shard);
}

std::int64_t Trainer::resume() {
  const auto latest = latest_checkpoint(cfg_.checkpoint_dir);
  if (!latest)
    input_error("--resume: no complete checkpoint (a step_* folder with manifest.json) in "
                "--checkpoint-dir {}", cfg_.checkpoint_dir);
  // The kept parameters (all of them, or the owned shard under ZeRO-3), then this rank's
  // routed experts.
  const std::size_t dense = store_.params().size();
  const std::size_t expert_params = experts_.params().size();
  const std::size_t expert_moments = expert_optimizer_ ? expert_optimizer_->exp_avg().size() : 0;
  CheckpointShard shard = read_checkpoint(grid_.world(), cfg_.checkpoint_dir, *latest, identity(),
                                          dense + expert_params, optimizer_->exp_avg().size() + expert_moments);
  // copy into the existing buffers: the model chunks point into them
  const auto dense_params = static_cast<std::ptrdiff_t>(dense);
  const auto dense_moments = static_cast<std::ptrdiff_t>(optimizer_->exp_avg().size());
  std::copy(shard.params.begin(), shard.params.begin() + dense_params, store_.params().begin());
  std::copy(shard.exp_avg.begin(), shard.exp_avg.begin() + dense_moments, optimizer_->exp_avg().begin());
  std::copy(shard.exp_avg_sq.begin(), shard.exp_avg_sq.begin() + dense_moments, optimizer_->exp_avg_sq().begin());
  std::copy(shard.params.begin() + dense_params, shard.params.end(), experts_.params().begin());
  if (expert_optimizer_) {
    std::copy(shard.exp_avg.begin() + dense_moments, shard.exp_avg.end(), expert_optimizer_->exp_avg().begin());
    std::copy(shard.exp_avg_sq.begin() + dense_moments, shard.exp_avg_sq.end(),
              expert_optimizer_->exp_avg_sq().begin());
  }
  step_ = shard.step;
  if (!shard.run_id.empty()) run_id_ = shard.run_id;
  return step_;
}

}  // namespace strata::runtime
