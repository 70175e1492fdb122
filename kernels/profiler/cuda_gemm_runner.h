// CudaGemmRunner: GemmRunner over CublasLtGemm on one device, all four dtypes, timed
// with CUDA events. Operands are built on the host from the check pattern, converted
// to the dtype and uploaded; validation downloads C and compares it with the
// reference in double.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "kernels/memory_space.h"
#include "kernels/profiler/gemm_runner.h"

namespace strata::kernels {
class CublasLtGemm;
class Buffer;
}  // namespace strata::kernels

namespace strata::kernels::profiler {

class CudaGemmRunner : public GemmRunner {
 public:
  // `peak_tflops` per dtype (e.g. from the datasheet profile); missing dtypes show no eff%.
  CudaGemmRunner(int device, std::map<GemmDType, double> peak_tflops);
  ~CudaGemmRunner() override;

  std::string device() const override { return name_; }
  std::vector<GemmDType> dtypes() const override;
  double peak_tflops(GemmDType d) const override;
  void prepare(const GemmProblem& p, GemmDType d) override;
  GemmCheck validate() override;
  double run_timed_us(int runs) override;
  void release() override;

 private:
  int device_;
  std::string name_;
  std::map<GemmDType, double> peak_;
  std::unique_ptr<MemorySpace> memory_;
  std::unique_ptr<CublasLtGemm> gemm_;
  GemmProblem p_;
  GemmDType dtype_ = GemmDType::Bf16;
  std::vector<float> a_host_, b_host_;
  std::unique_ptr<Buffer> a_, b_, c_;
};

}  // namespace strata::kernels::profiler
