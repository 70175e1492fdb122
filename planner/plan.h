// Plan: what `strata plan` decides and `strata train` / exports read: model,
// cluster, strategy, layer->stage map, rank grid and the prediction. Plain data + I/O.
#pragma once
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "planner/prediction.h"
#include "planner/strategy.h"

namespace strata::planner {

struct Plan {
  int schema_version = 1;
  models::ModelSpec model;
  std::string cluster;               // cluster name (or path) the plan was made for
  Strategy strategy;
  // layer groups (0 = embedding, 1..L blocks, L+1 head) per virtual stage:
  // stage_layers[v] for v = chunk * pp + stage (Megatron's interleaved numbering).
  std::vector<std::vector<int>> stage_layers;
  Prediction prediction;
};

// The default even split (embedding with the first stage, head with the last).
std::vector<std::vector<int>> even_stage_layers(const models::ModelSpec& m, int pp, int vpp);

std::string plan_to_yaml(const Plan& p);
std::string plan_to_json(const Plan& p);   // the DESIGN.md JSON object (one plan)
// Parses and checks consistency (strategy valid for the model, stage map covers each
// layer group exactly once in order, sizes match); InputError names the field.
Plan parse_plan_yaml(const std::string& text, const std::string& source);
Plan load_plan(const std::string& path);

}  // namespace strata::planner
