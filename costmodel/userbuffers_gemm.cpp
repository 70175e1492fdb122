#include "costmodel/userbuffers_gemm.h"

#include <algorithm>

namespace strata::costmodel {

UserbuffersChunks userbuffers_chunks(const models::Op& op, int tp) {
  using models::OpKind;
  if (tp <= 1 || op.routed_expert) return {};
  switch (op.kind) {
    case OpKind::Qkv:
    case OpKind::MlpUp:
    case OpKind::MlpGate: return {tp, 1};                          // ring exchange; bulk dgrad
    case OpKind::OutProj:
    case OpKind::MlpDown: return {kUserbuffersPipelineSplits, tp};  // pipeline; ring-exchange dgrad
    default: return {};
  }
}

namespace {

double chunked(const GemmCost& gemm, std::int64_t m, std::int64_t n, std::int64_t k, int chunks, DType dtype) {
  const std::int64_t rows = (m + chunks - 1) / chunks;
  return chunks * gemm.time_s(rows, n, k, dtype);
}

}  // namespace

ChunkedGemmTime chunked_gemm_time(const GemmCost& gemm, std::int64_t m, std::int64_t n, std::int64_t k,
                                  const UserbuffersChunks& c, DType dtype) {
  ChunkedGemmTime t;
  t.fwd_s = chunked(gemm, m, n, k, c.fwd, dtype);
  t.dgrad_s = chunked(gemm, m, k, n, c.dgrad, dtype);  // dX(m,k) = dY(m,n) W^T(n,k)
  t.wgrad_s = gemm.time_s(k, n, m, dtype);             // dW(k,n) = X^T(k,m) dY(m,n)
  return t;
}

double ring_exchange_exposed(double comm_s, double gemm_s, int chunks) {
  const double n = std::max(1, chunks);
  return std::max(0.0, comm_s - gemm_s * (n - 1) / n);
}

double pipeline_exposed(double comm_s, double gemm_s, int chunks) {
  const double n = std::max(1, chunks);
  return std::max(comm_s / n, comm_s - gemm_s * (n - 1) / n);
}

}  // namespace strata::costmodel
