#include "kernels/gemm_dtype.h"

#include "common/errors.h"

namespace strata::kernels {

const char* to_string(GemmDType d) {
  switch (d) {
    case GemmDType::Bf16: return "bf16";
    case GemmDType::Fp16: return "fp16";
    case GemmDType::Tf32: return "tf32";
    case GemmDType::Fp32: return "fp32";
  }
  return "?";
}

GemmDType gemm_dtype_from_string(const std::string& s) {
  for (GemmDType d : all_gemm_dtypes())
    if (s == to_string(d)) return d;
  input_error("unknown dtype '{}' (expected bf16, fp16, tf32 or fp32)", s);
}

int element_bytes(GemmDType d) { return (d == GemmDType::Bf16 || d == GemmDType::Fp16) ? 2 : 4; }

std::vector<GemmDType> all_gemm_dtypes() {
  return {GemmDType::Bf16, GemmDType::Fp16, GemmDType::Tf32, GemmDType::Fp32};
}

}  // namespace strata::kernels
