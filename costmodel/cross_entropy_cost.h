// Memory traffic of the vocabulary-parallel softmax cross-entropy, per logit element on one
// rank (the V/tp logits of each token), as Megatron-LM runs it. The logits are the LM head
// GEMM's output in the compute dtype (`logit_bytes` per element: 2 for bf16/fp16, 4 for
// fp32); the loss works on an fp32 copy. Counted kernel by kernel from the code:
//
// Unfused (megatron/core/tensor_parallel/cross_entropy.py, VocabParallelCrossEntropy, the
// default: Megatron-LM's --cross-entropy-loss-fusion is store_true, off; the 2021/2022
// Megatron called the same steps on output.float()):
//   forward   .float()               read logit_bytes, write 4   (no-op for fp32 logits)
//             max over the vocab     read 4
//             subtract the max       read 4, write 4   (in place)
//             exp                    read 4, write 4   (in place)
//             sum over the vocab     read 4
//             divide by the sum      read 4, write 4   (in place: the saved softmax)
//   backward  multiply by dloss      read 4, write 4   (in place, on the saved softmax)
//             cast back to the logit dtype for the LM head's backward: read 4, write logit_bytes
// Fused (megatron/core/fusions/fused_cross_entropy.py, jit-fused): the upcast and the max
//   are one kernel (read logit_bytes, write 4: the max needs no second read) and subtract +
//   exp are one in-place kernel (read 4, write 4); backward the same two passes.
// The gathers of the target logit and the per-token reductions are per token, not per
// logit element, and are left out (a 1/V share).
#pragma once

namespace strata::costmodel {

struct CrossEntropyWork {
  double fwd_bytes_per_logit = 0, bwd_bytes_per_logit = 0;
  int fwd_kernels = 0, bwd_kernels = 0;
};

inline CrossEntropyWork cross_entropy_work(bool fused, double logit_bytes) {
  const double upcast = logit_bytes < 4 ? logit_bytes + 4 : 0;  // .float() copies only a narrower dtype
  const double downcast = logit_bytes < 4 ? 4 + logit_bytes : 0;
  const int casts = logit_bytes < 4 ? 1 : 0;
  CrossEntropyWork w;
  if (fused) {
    const double upcast_max = logit_bytes < 4 ? upcast : 4;  // one pass either way
    w.fwd_bytes_per_logit = upcast_max + 8 + 4 + 8;       // [upcast+max], [sub+exp], sum, divide
    w.fwd_kernels = 4;
  } else {
    w.fwd_bytes_per_logit = upcast + 4 + 8 + 8 + 4 + 8;  // upcast, max, sub, exp, sum, divide
    w.fwd_kernels = 5 + casts;
  }
  w.bwd_bytes_per_logit = 8 + downcast;
  w.bwd_kernels = 1 + casts;
  return w;
}

}  // namespace strata::costmodel
