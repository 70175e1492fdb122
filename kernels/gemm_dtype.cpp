#include "kernels/gemm_dtype.h"

#include "common/enum_names.h"
#include "common/errors.h"

namespace strata::kernels {

constexpr EnumName<GemmDType> kGemmDTypeNames[] = {
    {GemmDType::Bf16, "bf16"}, {GemmDType::Fp16, "fp16"}, {GemmDType::Tf32, "tf32"}, {GemmDType::Fp32, "fp32"}};

const char* to_string(GemmDType d) { return enum_name(d, kGemmDTypeNames); }

GemmDType gemm_dtype_from_string(const std::string& s) {
  if (const auto d = enum_from_name(s, kGemmDTypeNames)) return *d;
  input_error("unknown dtype '{}' (expected {})", s, enum_names(kGemmDTypeNames, " or "));
}

int element_bytes(GemmDType d) { return (d == GemmDType::Bf16 || d == GemmDType::Fp16) ? 2 : 4; }

std::vector<GemmDType> all_gemm_dtypes() {
  std::vector<GemmDType> all;
  for (const auto& e : kGemmDTypeNames) all.push_back(e.value);
  return all;
}

}  // namespace strata::kernels
