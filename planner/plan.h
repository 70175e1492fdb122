// Plan: what `strata plan` decides and `strata train` / exports read: model,
// cluster, strategy, layer->stage map, rank grid and the prediction. Plain data + I/O.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/yaml_reader.h"
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
// When L is not a multiple of pp*vpp the extra blocks go to the middle virtual stages first.
// InputError when model.layers < pp * vpp.
// A strategy map as plan files write it (dp, tp, pp, cp, vpp, micro_batch, global_batch,
// zero, recompute, sequence_parallel, schedule, rank_order, ep, etp, precision).
Strategy strategy_from_yaml(const YamlReader& r);
std::vector<std::vector<int>> even_stage_layers(const models::ModelSpec& m, int pp, int vpp);
// InputError (message starts "stage_layers") unless the map has pp*vpp non-empty virtual
// stages listing layer groups 0..L+1 once each, in order.
void check_stage_layers(const std::vector<std::vector<int>>& stage_layers,
                        const models::ModelSpec& m, int pp, int vpp);
// Transformer blocks (groups 1..L) per virtual stage, ignoring embedding and head groups.
std::vector<std::int64_t> blocks_per_stage(const std::vector<std::vector<int>>& stage_layers,
                                           const models::ModelSpec& m);

std::string plan_to_yaml(const Plan& p);
// The DESIGN.md JSON object (one plan): model (name), cluster, gpus, strategy{...},
// prediction{..., breakdown_s{...}}, fits_memory, plus schema_version and stage_layers.
// Non-finite numbers are written as null.
std::string plan_to_json(const Plan& p);
// Parses and checks consistency (strategy valid for the model, stage map covers each
// layer group exactly once in order, sizes match); InputError names the field.
Plan parse_plan_yaml(const std::string& text, const std::string& source);
Plan load_plan(const std::string& path);
// A model catalog name or file, or a plan file (its model): a .yaml/.yml whose top level
// holds a `model` map and a `strategy` map is read as a plan.
models::ModelSpec load_model_or_plan(const std::string& name_or_path);

}  // namespace strata::planner
