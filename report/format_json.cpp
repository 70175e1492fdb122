#include "report/format_json.h"
#include "common/json_text.h"

#include "common/errors.h"

namespace strata::report {

using json = nlohmann::ordered_json;

json plan_json(const planner::Plan& plan) {
  json j;
  try {
    j = strata::parse_json(planner::plan_to_json(plan));
  } catch (const json::exception& e) {
    throw InternalError(std::string("planner::plan_to_json produced invalid JSON: ") + e.what());
  }
  STRATA_CHECK(j.is_object(), "planner::plan_to_json must produce an object");
  // The DESIGN.md keys every consumer relies on; filled here only if the plan writer
  // left them out (never overriding what it wrote).
  if (!j.contains("model")) j["model"] = plan.model.name;
  if (!j.contains("cluster")) j["cluster"] = plan.cluster;
  if (!j.contains("gpus")) j["gpus"] = plan.strategy.gpus();
  if (!j.contains("fits_memory")) j["fits_memory"] = plan.prediction.fits_memory;
  return j;
}

namespace {

std::string dump(const json& j) { return j.dump(2) + "\n"; }

}  // namespace

std::string format_plan_json(const PlanReport& r) {
  json out = json::object();
  out["schema_version"] = kJsonSchemaVersion;
  out["model"] = r.model;
  if (!r.plans.empty()) out["seq_len"] = r.plans.front().model.seq_len;
  if (!r.plans.empty() && !r.plans.front().prediction.precision.empty())
    out["precision"] = r.plans.front().prediction.precision;
  out["cluster"] = r.cluster;
  out["device"] = r.device;
  out["gpus"] = r.gpus;
  out["global_batch"] = r.global_batch;
  out["memory_capacity_gib"] = r.memory_capacity_gib;
  if (r.headroom_gib > 0) out["memory_headroom_gib"] = r.headroom_gib;
  out["candidates_evaluated"] = r.candidates_evaluated;
  out["infeasible_memory"] = r.infeasible_memory;
  out["invalid"] = r.invalid;
  out["search_s"] = r.search_s;
  out["defaults"] = r.defaults;
  out["notes"] = r.notes;
  json plans = json::array();
  for (const auto& p : r.plans) {
    json j = plan_json(p);
    if (r.target.given())
      j["time_to_train"] =
          time_to_train_json(time_to_train(p.strategy, p.prediction, p.model.seq_len, r.target));
    plans.push_back(std::move(j));
  }
  out["plans"] = std::move(plans);
  if (r.imported_job) {
    json job = plan_json(*r.imported_job);
    job["source"] = r.imported_job_source;
    out["job"] = std::move(job);
  }
  return dump(out);
}

std::string format_simulation_json(const PlanReport& r) {
  STRATA_CHECK(r.plans.size() == 1, "simulate report holds {} plans", r.plans.size());
  json plan = plan_json(r.plans.front());
  json out = json::object();
  out["schema_version"] = kJsonSchemaVersion;
  for (auto it = plan.begin(); it != plan.end(); ++it) out[it.key()] = it.value();
  if (!out.contains("device")) out["device"] = r.device;
  if (!out.contains("memory_capacity_gib")) out["memory_capacity_gib"] = r.memory_capacity_gib;
  if (!out.contains("defaults")) out["defaults"] = r.defaults;
  if (!out.contains("notes")) out["notes"] = r.notes;
  if (r.target.given()) {
    const auto& p = r.plans.front();
    out["time_to_train"] =
        time_to_train_json(time_to_train(p.strategy, p.prediction, p.model.seq_len, r.target));
  }
  return dump(out);
}

namespace {
json model_json(const ModelRow& r) {
  const auto& m = r.spec;
  json o = {{"name", m.name},
            {"layers", m.layers},
            {"hidden", m.hidden},
            {"heads", m.heads},
            {"kv_heads", m.kv_heads},
            {"ffn", m.ffn},
            {"vocab", m.vocab},
            {"seq_len", m.seq_len},
            {"activation", models::to_string(m.activation)},
            {"norm", models::to_string(m.norm)},
            {"positions", models::to_string(m.positions)},
            {"tied_embeddings", m.tied_embeddings},
            {"params", r.params},
            {"params_total", r.params},
            {"params_active", r.params_active},
            {"mtp_layers", m.mtp_layers},
            {"params_mtp", r.params_mtp},
            {"params_without_mtp", r.params - r.params_mtp},
            {"params_active_without_mtp", r.params_active - r.params_active_mtp},
            {"head_dim", m.head_dim()},
            {"attention", models::to_string(m.attention())}};
  if (m.mla)
    o["mla"] = {{"q_lora_rank", m.mla->q_lora_rank}, {"kv_lora_rank", m.mla->kv_lora_rank},
                {"qk_nope_head_dim", m.mla->qk_nope_head_dim}, {"qk_rope_head_dim", m.mla->qk_rope_head_dim},
                {"v_head_dim", m.mla->v_head_dim}};
  if (m.moe) {
    o["moe"] = {{"experts", m.moe->experts}, {"top_k", m.moe->top_k}, {"expert_ffn", m.moe->expert_ffn},
                {"shared_experts", m.moe->shared_experts}, {"shared_expert_ffn", m.moe->shared_expert_ffn},
                {"first_dense_layers", m.moe->first_dense_layers}, {"router", models::to_string(m.moe->router)}};
    if (m.moe->capacity_factor > 0) o["moe"]["capacity_factor"] = m.moe->capacity_factor;
    else o["moe"]["capacity_factor"] = nullptr;  // dropless
    o["moe"]["layer_step"] = m.moe->layer_step;                      // 1 = every block past the dense ones
    o["moe"]["moe_layers"] = m.moe_layer_count();
    o["moe"]["groups"] = m.moe->groups;                              // 0 = no group-limited routing
    o["moe"]["max_groups_per_token"] = m.moe->max_groups_per_token;
  }
  return o;
}
}  // namespace

std::string format_models_json(const std::vector<ModelRow>& rows) {
  json list = json::array();
  for (const auto& r : rows) list.push_back(model_json(r));
  return dump({{"schema_version", kJsonSchemaVersion}, {"models", list}});
}

std::string format_model_json(const ModelRow& row) {
  json o = model_json(row);
  o["schema_version"] = kJsonSchemaVersion;
  return dump(o);
}

std::string format_clusters_json(const std::vector<costmodel::ClusterSpec>& clusters) {
  json list = json::array();
  for (const auto& c : clusters) {
    json peak = json::object();
    for (const auto& [d, tf] : c.device.peak_tflops) peak[costmodel::to_string(d)] = tf;
    list.push_back(
        {{"name", c.name},
         {"device", c.device.name},
         {"gpus_per_node", c.gpus_per_node},
         {"nodes", c.nodes},
         {"total_gpus", c.total_gpus()},
         {"intra_node_bandwidth_gbps", c.intra_node.bandwidth_gbps},
         {"inter_node_bandwidth_gbps", c.inter_node.bandwidth_gbps},
         {"memory_gib", c.device.memory_gib},
         {"peak_tflops", peak},
         {"source", c.device.source.kind},
         {"measured_tables", !c.device.gemm_table.empty() || !c.device.collective_table.empty()}});
  }
  return dump({{"schema_version", kJsonSchemaVersion}, {"clusters", list}});
}

}  // namespace strata::report
