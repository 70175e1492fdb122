// GemmDType: the element types the GEMM kernels and the profiler handle. Names match
// the profile format's dtype strings ("bf16", "fp16", "tf32", "fp32").
#pragma once
#include <string>
#include <vector>

namespace strata::kernels {

enum class GemmDType { Bf16, Fp16, Tf32, Fp32 };

const char* to_string(GemmDType d);
// InputError: "unknown dtype 'x' (expected bf16, fp16, tf32 or fp32)".
GemmDType gemm_dtype_from_string(const std::string& s);
// Bytes of one stored element (tf32 is stored as fp32).
int element_bytes(GemmDType d);
std::vector<GemmDType> all_gemm_dtypes();

}  // namespace strata::kernels
