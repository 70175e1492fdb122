// Exports of a plan to the frameworks people already run: Megatron-LM launch arguments,
// a DeepSpeed config JSON and a TorchTitan TOML fragment. Pure functions Plan -> text;
// `strata export` (cli/cmd_export.cpp) writes the text. Every name used is one the
// framework documents (see the citations in export_formats.cpp and tests/export/export_test.cpp);
// where a framework cannot express part of the plan the output says so in a comment.
#pragma once
#include <string>
#include <vector>

#include "planner/plan.h"

namespace strata::exports {

enum class ExportTarget { Megatron, DeepSpeed, TorchTitan };

// "megatron" | "deepspeed" | "torchtitan"; InputError names --to and the choices.
ExportTarget export_target_from_string(const std::string& s);
const char* to_string(ExportTarget t);
std::vector<std::string> export_target_names();

// Megatron-LM (pretrain_gpt.py) arguments, one per line with shell continuations, after a
// comment header. Data parallel size is implied by the launcher's world size.
std::string export_megatron(const planner::Plan& p);
// DeepSpeed config JSON (batch, ZeRO, bf16, pipeline, AutoTP, activation checkpointing)
// plus a "strata_plan" section with what the config file cannot hold (PipelineModule
// arguments, notes).
std::string export_deepspeed(const planner::Plan& p);
// TorchTitan job-config TOML: [training], [parallelism], [activation_checkpoint].
std::string export_torchtitan(const planner::Plan& p);

std::string export_plan(const planner::Plan& p, ExportTarget t);

// Megatron-LM --pipeline-model-parallel-layout string for the plan's stage map:
// virtual stages in Megatron order separated by '|', E = embedding, t = decoder layer,
// L = loss (final norm + output layer); e.g. "E,t*3|t*4|t*4|t*3,L".
std::string megatron_layout(const planner::Plan& p);

}  // namespace strata::exports
