// GemmRunner: one backend's GEMM as the sweep sees it. The sweep prepares a problem,
// validates one run against the reference, then times bursts of runs; the runner owns
// the operands and the timer (host clock on cpu, CUDA events on cuda).
#pragma once
#include <string>
#include <vector>

#include "kernels/gemm_dtype.h"
#include "kernels/profiler/gemm_check.h"
#include "kernels/profiler/gemm_problems.h"

namespace strata::kernels::profiler {

class GemmRunner {
 public:
  virtual ~GemmRunner() = default;
  virtual std::string device() const = 0;                 // "AMD EPYC", "NVIDIA H200"
  virtual std::vector<GemmDType> dtypes() const = 0;      // what this backend can run
  virtual double peak_tflops(GemmDType d) const = 0;      // per rank; 0 when unknown
  // Allocates and fills the operands of C(m,n) = A(m,k) B(k,n).
  virtual void prepare(const GemmProblem& p, GemmDType d) = 0;
  // Runs once and compares C with the reference.
  virtual GemmCheck validate() = 0;
  // Runs `runs` >= 1 times back to back; returns the mean time per run in microseconds.
  virtual double run_timed_us(int runs) = 0;
  // Frees the operands.
  virtual void release() = 0;
};

}  // namespace strata::kernels::profiler
