// Calibration step 1 (detail/calibration_steps.h): the input checks, identical on every
// rank, before MPI starts and before anything is measured, and the GEMM shapes to sweep:
// squares plus the sharded GEMMs of the --model shapes (forward, dgrad, wgrad per TP
// degree) and their per-head attention GEMMs.
#include <algorithm>
#include <cctype>
#include <exception>
#include <string>
#include <vector>

#include "calibration/detail/calibration_steps.h"
#include "common/errors.h"
#include "models/model_spec.h"
#include "planner/plan.h"
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
#include "kernels/cuda/cuda_device.h"
#endif

namespace strata::calibration::detail {

namespace kp = strata::kernels::profiler;
using kernels::GemmDType;

namespace {

// "1073741824", "64M", "1GiB", "4k" -> bytes.
std::int64_t parse_bytes(const std::string& text, const char* flag) {
  std::size_t pos = 0;
  long double value = 0;
  try {
    value = std::stold(text, &pos);
  } catch (const std::exception&) {
    input_error("{} ({}) must be a byte count such as 1048576, 64M or 1G", flag, text);
  }
  std::string unit = text.substr(pos);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  long double scale = 1;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0L;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0L * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0L * 1024 * 1024;
  else input_error("{} ({}): unknown unit '{}' (expected B, K, M or G)", flag, text, unit);
  long double bytes = value * scale;
  if (!(bytes >= 8) || bytes > 16.0L * 1024 * 1024 * 1024)
    input_error("{} ({}) must be between 8 B and 16 GiB", flag, text);
  return static_cast<std::int64_t>(bytes);
}

}  // namespace

SweepPlan plan_sweep(const CalibrationRequest& f, const CalibrationOutput& io) {
  SweepPlan plan;
  const kernels::Backend backend = kernels::backend_from_string(f.backend);
  plan.backend = backend;
  if (!kernels::backend_available(backend))
    input_error("--backend {}: this strata was built without the CUDA backend (configure with a CUDA "
                "toolkit and NCCL, e.g. `cmake --preset cuda`)",
                f.backend);
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
  if (backend == kernels::Backend::Cuda && kernels::cuda_device_count() == 0)
    input_error("--backend cuda: {}", kernels::cuda_unavailable_reason());
#endif
  if (f.out.empty()) input_error("--out is required (the profile YAML to write, or - for stdout)");
  if (io.check_out) io.check_out(f.out);
  for (int tp : f.tp_degrees)
    if (tp < 1 || tp > 1024) input_error("--tp-degrees ({}) must be between 1 and 1024", tp);
  if (f.micro_batch < 1 || f.micro_batch > 4096)
    input_error("--micro-batch ({}) must be between 1 and 4096", f.micro_batch);
  plan.max_bytes = f.max_bytes.empty() ? (f.quick ? std::int64_t{64} << 20 : std::int64_t{1} << 30)
                                       : parse_bytes(f.max_bytes, "--max-bytes");
  plan.max_dim = f.max_gemm_dim > 0 ? f.max_gemm_dim : (f.quick ? 1024 : 4096);
  if (plan.max_dim > 65536) input_error("--max-gemm-dim ({}) must be at most 65536", plan.max_dim);
  std::vector<GemmDType>& dtypes = plan.dtypes;
  for (const auto& d : f.dtypes) dtypes.push_back(kernels::gemm_dtype_from_string(d));
  if (dtypes.empty())
    dtypes = backend == kernels::Backend::Cpu ? std::vector<GemmDType>{GemmDType::Fp32}
                                              : kernels::all_gemm_dtypes();
  if (backend == kernels::Backend::Cpu)
    for (GemmDType d : dtypes)
      if (d != GemmDType::Fp32) input_error("--dtypes ({}): the cpu backend runs fp32 only", to_string(d));
  for (const auto& m : f.models) {
    models::ModelSpec spec;
    try {
      spec = planner::load_model_or_plan(m);  // a plan file gives its model, as --model does elsewhere
    } catch (const InputError& e) {
      input_error("--model: {}", e.what());
    }
    plan.graphs.push_back(models::ModelGraph::build(spec, f.micro_batch));
  }
  std::vector<kp::GemmProblem> problems = kp::square_gemm_problems(128, plan.max_dim);
  for (const auto& g : plan.graphs) {
    auto mp = kp::model_gemm_problems(g, f.tp_degrees);
    problems.insert(problems.end(), mp.begin(), mp.end());
    auto ep = kp::expert_gemm_problems(g, f.tp_degrees);
    problems.insert(problems.end(), ep.begin(), ep.end());
    auto ap = kp::attention_gemm_problems(g);
    problems.insert(problems.end(), ap.begin(), ap.end());
  }
  plan.problems = kp::dedupe_gemm_problems(std::move(problems));
  return plan;
}

}  // namespace strata::calibration::detail
