#include "costmodel/fp8_linear.h"

namespace strata::costmodel {

bool runs_in_fp8(models::OpKind k) {
  using models::OpKind;
  return k == OpKind::Qkv || k == OpKind::OutProj || k == OpKind::MlpUp || k == OpKind::MlpGate ||
         k == OpKind::MlpDown || k == OpKind::ExpertUp || k == OpKind::ExpertGate || k == OpKind::ExpertDown;
}

double fp8_weights(const models::Op& op) {
  if (!runs_in_fp8(op.kind)) return 0.0;
  // a grouped GEMM (routed experts) holds gemm_count weights of this shape
  return static_cast<double>(op.gemm.k) * static_cast<double>(op.gemm.n) * static_cast<double>(op.gemm_count);
}

Fp8CastWork fp8_activation_casts(std::int64_t m, std::int64_t n, std::int64_t k) {
  Fp8CastWork w;
  w.fwd_bytes = kFp8CastBytesPerElement * static_cast<double>(m) * static_cast<double>(k);
  w.bwd_bytes = kFp8CastBytesPerElement * static_cast<double>(m) * static_cast<double>(n);
  w.fwd_kernels = 1;
  w.bwd_kernels = 1;
  return w;
}

}  // namespace strata::costmodel
