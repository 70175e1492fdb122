// The keys DESIGN.md gives a plan in JSON (format_plan_json's plans, format_simulation_json,
// `strata plan|simulate --format json`): the plan's own, its strategy's, its prediction's
// and the breakdown's. Stops at a missing top-level key, whose object the others are in.
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace strata::testing {

inline void expect_design_plan_keys(const nlohmann::json& p) {
  for (const char* k : {"model", "cluster", "gpus", "strategy", "prediction", "fits_memory"})
    ASSERT_TRUE(p.contains(k)) << "plan lacks " << k << ": " << p.dump();
  for (const char* k : {"dp", "tp", "pp", "vpp", "micro_batch", "global_batch", "zero", "recompute",
                        "sequence_parallel", "schedule"})
    EXPECT_TRUE(p["strategy"].contains(k)) << "strategy lacks " << k;
  for (const char* k :
       {"iteration_s", "tokens_per_s", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu",
        "peak_memory_gib", "bubble_fraction", "breakdown_s"})
    EXPECT_TRUE(p["prediction"].contains(k)) << "prediction lacks " << k;
  for (const char* k : {"compute", "tp_comm", "pp_comm", "dp_comm", "optimizer", "bubble"})
    EXPECT_TRUE(p["prediction"]["breakdown_s"].contains(k)) << "breakdown lacks " << k;
}

}  // namespace strata::testing
