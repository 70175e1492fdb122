#include "report/format_yaml.h"

#include <yaml-cpp/yaml.h>

#include "report/format_json.h"
#include "common/errors.h"
#include "planner/plan.h"

namespace strata::report {

namespace {

// Loads YAML another component wrote; failure to re-read our own output is a bug.
YAML::Node reload(const std::string& text, const char* what) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InternalError(std::string(what) + " produced YAML that does not load: " + e.what());
  }
}

std::string finish(const YAML::Emitter& e) {
  STRATA_CHECK(e.good(), "YAML emitter: {}", e.GetLastError());
  return std::string(e.c_str()) + "\n";
}

void emit_strings(YAML::Emitter& e, const char* key, const std::vector<std::string>& items) {
  e << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const auto& s : items) e << s;
  e << YAML::EndSeq;
}

}  // namespace

std::string format_plan_yaml(const PlanReport& r) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "schema_version" << YAML::Value << kJsonSchemaVersion;
  e << YAML::Key << "model" << YAML::Value << r.model;
  e << YAML::Key << "cluster" << YAML::Value << r.cluster;
  e << YAML::Key << "device" << YAML::Value << r.device;
  e << YAML::Key << "gpus" << YAML::Value << r.gpus;
  e << YAML::Key << "global_batch" << YAML::Value << r.global_batch;
  e << YAML::Key << "memory_capacity_gib" << YAML::Value << r.memory_capacity_gib;
  e << YAML::Key << "candidates_evaluated" << YAML::Value << r.candidates_evaluated;
  e << YAML::Key << "infeasible_memory" << YAML::Value << r.infeasible_memory;
  e << YAML::Key << "invalid" << YAML::Value << r.invalid;
  e << YAML::Key << "search_s" << YAML::Value << r.search_s;
  // Only when --memory-headroom was given, so the default output stays as it was.
  if (r.headroom_gib > 0) e << YAML::Key << "memory_headroom_gib" << YAML::Value << r.headroom_gib;
  emit_strings(e, "defaults", r.defaults);
  emit_strings(e, "notes", r.notes);
  e << YAML::Key << "plans" << YAML::Value << YAML::BeginSeq;
  for (const auto& p : r.plans) e << reload(planner::plan_to_yaml(p), "planner::plan_to_yaml");
  e << YAML::EndSeq;
  e << YAML::EndMap;
  return finish(e);
}

std::string format_simulation_yaml(const PlanReport& r) {
  STRATA_CHECK(r.plans.size() == 1, "simulate report holds {} plans", r.plans.size());
  return planner::plan_to_yaml(r.plans.front());
}

std::string format_models_yaml(const std::vector<ModelRow>& rows) {
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "models" << YAML::Value << YAML::BeginSeq;
  for (const auto& r : rows) e << reload(models::to_yaml(r.spec), "models::to_yaml");
  e << YAML::EndSeq << YAML::EndMap;
  return finish(e);
}

std::string format_clusters_yaml(const std::vector<costmodel::ClusterSpec>& clusters) {
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "clusters" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : clusters) e << reload(costmodel::to_yaml(c), "costmodel::to_yaml");
  e << YAML::EndSeq << YAML::EndMap;
  return finish(e);
}

}  // namespace strata::report
