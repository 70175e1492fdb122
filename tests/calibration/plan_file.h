// A plan file (`strata plan --out` format) of a model that is in no catalog, written for the
// tests that give a plan where a model is taken: the model read back can only have come
// from the plan.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/atomic_file.h"
#include "costmodel/cluster_spec.h"
#include "models/model_spec.h"
#include "planner/plan.h"
#include "planner/simulator.h"

namespace strata::testing {

// Llama 3 8B cut to 12 blocks and renamed, planned tp 2 x dp 4 on a DGX H100, as
// `dir`/`file`; returns the path.
inline std::string write_plan_of_a_cut_llama(const std::filesystem::path& dir, const std::string& file) {
  planner::Plan p;
  p.model = models::load_model("llama3-8b");
  p.model.name = "llama3-8b-cut12";
  p.model.layers = 12;
  p.cluster = "dgx-h100";
  p.strategy.dp = 4;
  p.strategy.tp = 2;
  p.strategy.micro_batch = 1;
  p.strategy.global_batch = 64;
  p.strategy.sequence_parallel = true;
  p.stage_layers = planner::even_stage_layers(p.model, 1, 1);
  p.prediction = planner::simulate(p.model, costmodel::load_cluster(p.cluster), p.strategy, {}).prediction;
  std::filesystem::create_directories(dir);
  const std::string path = (dir / file).string();
  write_file_atomic(path, planner::plan_to_yaml(p));
  return path;
}

}  // namespace strata::testing
