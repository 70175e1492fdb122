// CpuGemmRunner: GemmRunner over the CPU backend's gemm_f32 (OpenBLAS sgemm), fp32
// only, timed with the steady clock.
#pragma once
#include <functional>
#include <vector>

#include "kernels/profiler/gemm_runner.h"

namespace strata::kernels::profiler {

class CpuGemmRunner : public GemmRunner {
 public:
  using GemmFn = std::function<void(bool, bool, std::size_t, std::size_t, std::size_t, float,
                                    const float*, const float*, float, float*)>;
  // `gemm` defaults to kernels::gemm_f32; tests inject a faulty one.
  CpuGemmRunner(std::string device, double peak_tflops_fp32, GemmFn gemm = {});

  std::string device() const override { return device_; }
  std::vector<GemmDType> dtypes() const override { return {GemmDType::Fp32}; }
  double peak_tflops(GemmDType d) const override;
  void prepare(const GemmProblem& p, GemmDType d) override;
  GemmCheck validate() override;
  double run_timed_us(int runs) override;
  void release() override;

 private:
  void run();
  std::string device_;
  double peak_tflops_fp32_;
  GemmFn gemm_;
  GemmProblem p_;
  std::vector<float> a_, b_, c_;
};

}  // namespace strata::kernels::profiler
