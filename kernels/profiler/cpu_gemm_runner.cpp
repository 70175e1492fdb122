#include "kernels/profiler/cpu_gemm_runner.h"

#include <algorithm>
#include <chrono>

#include "common/errors.h"
#include "kernels/backend.h"

namespace strata::kernels::profiler {

CpuGemmRunner::CpuGemmRunner(std::string device, double peak_tflops_fp32, GemmFn gemm)
    : device_(std::move(device)), peak_tflops_fp32_(peak_tflops_fp32), gemm_(std::move(gemm)) {
  if (!gemm_) gemm_ = &kernels::gemm_f32;
}

double CpuGemmRunner::peak_tflops(GemmDType d) const {
  return d == GemmDType::Fp32 ? peak_tflops_fp32_ : 0.0;
}

void CpuGemmRunner::prepare(const GemmProblem& p, GemmDType d) {
  if (d != GemmDType::Fp32)
    input_error("the cpu backend runs fp32 GEMMs only (asked for {})", to_string(d));
  p_ = p;
  const auto m = static_cast<std::size_t>(p.m), n = static_cast<std::size_t>(p.n),
             k = static_cast<std::size_t>(p.k);
  a_.resize(m * k);
  b_.resize(k * n);
  c_.assign(m * n, 0.0f);
  fill_check_pattern(a_.data(), a_.size(), 1 + m * 31 + k);
  fill_check_pattern(b_.data(), b_.size(), 2 + n * 37 + k);
}

void CpuGemmRunner::run() {
  gemm_(false, false, static_cast<std::size_t>(p_.m), static_cast<std::size_t>(p_.n),
        static_cast<std::size_t>(p_.k), 1.0f, a_.data(), b_.data(), 0.0f, c_.data());
}

GemmCheck CpuGemmRunner::validate() {
  std::fill(c_.begin(), c_.end(), std::nanf(""));  // a kernel that writes nothing fails
  run();
  return check_gemm(p_.m, p_.n, p_.k, a_.data(), b_.data(), c_.data(), GemmDType::Fp32);
}

double CpuGemmRunner::run_timed_us(int runs) {
  runs = std::max(1, runs);
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < runs; ++r) run();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / runs;
}

void CpuGemmRunner::release() {
  a_ = {};
  b_ = {};
  c_ = {};
}

}  // namespace strata::kernels::profiler
