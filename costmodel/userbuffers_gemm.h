// UserbuffersGemm: how Transformer Engine's userbuffers tensor-parallel overlap (Megatron
// --tp-comm-overlap, with sequence parallelism) cuts a layer's GEMMs into chunks so that
// each chunk's communication runs beside the next chunk's GEMM, and what that leaves
// exposed. Facts from TransformerEngine v1.9 (e79d915a) transformer_engine/pytorch/module/
// base.py (default userbuffers config) and csrc comm_gemm_overlap.h, as Megatron-Core
// r0.8.0 (baf94af3) sets them up (megatron/training/initialize.py passes no config file:
// TE's defaults; model_parallel_config.py: tp_comm_overlap_ag / _rs and the bulk dgrad /
// wgrad overlaps on, rs_dgrad off):
//   ring_exchange (all-gather then GEMM): qkv and fc1 forward, proj and fc2 dgrad. The
//     gathered tokens arrive in tp chunks over the copy engines; the GEMM runs once per
//     chunk (m / tp rows each): the first chunk is local, each next one is received while
//     the previous one multiplies.
//   pipeline (GEMM then reduce-scatter): proj and fc2 forward, in num_splits = 4 chunks of
//     m / 4 rows; chunk i's reduce-scatter runs beside chunk i+1's GEMM, the last one after
//     the last GEMM.
//   bulk: qkv / fc1 dgrad and wgrad run whole beside a whole collective.
// Smaller GEMMs reach a lower rate (GemmCost's table), which is the price of the overlap.
#pragma once
#include <cstdint>

#include "costmodel/gemm_cost.h"
#include "models/op.h"

namespace strata::costmodel {

// Chunks of the reduce-scatter ("pipeline") overlap: TE's default num_splits.
inline constexpr int kUserbuffersPipelineSplits = 4;

struct UserbuffersChunks {
  int fwd = 1;    // the forward GEMM runs in this many chunks of m / fwd rows
  int dgrad = 1;  // the backward input-gradient GEMM likewise (wgrad always whole)
};
// For a block's column-parallel (all-gather before it) or row-parallel (reduce-scatter
// after it) GEMM under userbuffers with tp > 1; {1, 1} for every other op. The gate half of
// a SwiGLU fc1 is in TE's one fc1 GEMM: chunked like the up projection.
UserbuffersChunks userbuffers_chunks(const models::Op& op, int tp);

// Time of the op's GEMMs (sharded (m, n, k) as OpCost shards them) with the chunking:
// fwd = chunks x GEMM(m / chunks, n, k), dgrad likewise, wgrad whole.
struct ChunkedGemmTime {
  double fwd_s = 0, dgrad_s = 0, wgrad_s = 0;
};
ChunkedGemmTime chunked_gemm_time(const GemmCost& gemm, std::int64_t m, std::int64_t n, std::int64_t k,
                                  const UserbuffersChunks& c, DType dtype);

// Exposed part of a collective of `comm_s` pipelined with `gemm_s` of GEMM in `chunks`
// equal pieces.
// Ring exchange (communication first, the first chunk local): the GEMMs of chunks
//   0..n-2 hide the n-1 transfers: max(0, comm - gemm (n-1)/n).
// Pipeline (GEMM first, its reduce-scatter after): the last chunk's collective always
//   waits for the last GEMM: max(comm / n, comm - gemm (n-1)/n).
double ring_exchange_exposed(double comm_s, double gemm_s, int chunks);
double pipeline_exposed(double comm_s, double gemm_s, int chunks);

}  // namespace strata::costmodel
