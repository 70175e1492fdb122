#include "kernels/profiler/cuda_gemm_runner.h"

#include <cstdint>

#include "kernels/buffer.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cuda_memory.h"
#include "kernels/cuda/detail/half_bits.h"

namespace strata::kernels::profiler {

namespace {

// Converts host floats to the dtype's storage and uploads them.
void upload_as(MemorySpace& mem, GemmDType d, const std::vector<float>& src, void* dst) {
  if (element_bytes(d) == 4) {
    mem.upload(dst, src.data(), src.size() * 4);
    return;
  }
  std::vector<std::uint16_t> tmp(src.size());
  for (std::size_t i = 0; i < src.size(); ++i)
    tmp[i] = d == GemmDType::Bf16 ? detail::float_to_bf16(src[i]) : detail::float_to_half(src[i]);
  mem.upload(dst, tmp.data(), tmp.size() * 2);
}

std::vector<float> download_as(MemorySpace& mem, GemmDType d, const void* src, std::size_t count) {
  std::vector<float> out(count);
  if (element_bytes(d) == 4) {
    mem.download(out.data(), src, count * 4);
    return out;
  }
  std::vector<std::uint16_t> tmp(count);
  mem.download(tmp.data(), src, count * 2);
  for (std::size_t i = 0; i < count; ++i)
    out[i] = d == GemmDType::Bf16 ? detail::bf16_to_float(tmp[i]) : detail::half_to_float(tmp[i]);
  return out;
}

}  // namespace

CudaGemmRunner::CudaGemmRunner(int device, std::map<GemmDType, double> peak_tflops)
    : device_(device), peak_(std::move(peak_tflops)) {
  cuda_set_device(device_);
  name_ = cuda_device_info(device_).name;
  memory_ = cuda_memory(device_);
  gemm_ = std::make_unique<CublasLtGemm>();
}

CudaGemmRunner::~CudaGemmRunner() = default;

std::vector<GemmDType> CudaGemmRunner::dtypes() const { return all_gemm_dtypes(); }

double CudaGemmRunner::peak_tflops(GemmDType d) const {
  auto it = peak_.find(d);
  return it == peak_.end() ? 0.0 : it->second;
}

void CudaGemmRunner::prepare(const GemmProblem& p, GemmDType d) {
  release();
  p_ = p;
  dtype_ = d;
  const auto m = static_cast<std::size_t>(p.m), n = static_cast<std::size_t>(p.n),
             k = static_cast<std::size_t>(p.k);
  a_host_.resize(m * k);
  b_host_.resize(k * n);
  fill_check_pattern(a_host_.data(), a_host_.size(), 1 + m * 31 + k);
  fill_check_pattern(b_host_.data(), b_host_.size(), 2 + n * 37 + k);
  const auto eb = static_cast<std::size_t>(element_bytes(d));
  a_ = std::make_unique<Buffer>(*memory_, m * k * eb);
  b_ = std::make_unique<Buffer>(*memory_, k * n * eb);
  c_ = std::make_unique<Buffer>(*memory_, m * n * eb);
  upload_as(*memory_, d, a_host_, a_->get());
  upload_as(*memory_, d, b_host_, b_->get());
}

GemmCheck CudaGemmRunner::validate() {
  memory_->zero(c_->get(), c_->bytes());
  gemm_->matmul(dtype_, false, false, p_.m, p_.n, p_.k, 1.0f, a_->get(), b_->get(), 0.0f, c_->get());
  memory_->synchronize();
  std::vector<float> c = download_as(*memory_, dtype_, c_->get(), static_cast<std::size_t>(p_.m * p_.n));
  return check_gemm(p_.m, p_.n, p_.k, a_host_.data(), b_host_.data(), c.data(), dtype_);
}

double CudaGemmRunner::run_timed_us(int runs) {
  return gemm_->timed_matmul_us(dtype_, p_.m, p_.n, p_.k, a_->get(), b_->get(), c_->get(), runs);
}

void CudaGemmRunner::release() {
  a_.reset();
  b_.reset();
  c_.reset();
  a_host_ = {};
  b_host_ = {};
}

}  // namespace strata::kernels::profiler
