// GPT training kernels for one GPU (CUDA), the device counterparts of the CPU runtime's
// norm.cpp, activation.cpp, attention.cpp (softmax and head permutes),
// vocab_parallel_embedding.cpp, vocab_parallel_cross_entropy.cpp and adamw.cpp, forward
// and backward side by side (llm.c style). Every function launches on `stream` and
// returns at once; launch errors throw DeviceError. Tensors are fp32 device buffers
// unless named *_lp (bf16), row-major, with shapes in the comments:
//   N = tokens of a micro-batch (B * S), C = hidden, F = ffn, V = vocab,
//   H = heads, D = head dim, heads layout (B, H, S, D).
// Backward functions that say "accumulates" add into their outputs (parameter gradients
// over micro-batches, and the residual-stream gradient), as the CPU kernels do.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace strata::runtime::gpu {

// --- precision conversions around the 16-bit GEMMs ---
// dst_lp (n) = bf16(src (n)), round to nearest even.
void f32_to_bf16(void* dst_lp, const float* src, std::int64_t n, cudaStream_t stream);
// c (n) = float(src_lp) when beta == 0 (c is not read: it may hold garbage), else
// c = beta * c + float(src_lp).
void bf16_to_f32(float* c, const void* src_lp, float beta, std::int64_t n, cudaStream_t stream);

// --- elementwise / broadcast ---
// y (rows, cols) += b (cols) on every row.
void add_bias(float* y, const float* b, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// db (cols) += sum over rows of dy (rows, cols).
void bias_grad(float* db, const float* dy, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// out (n) = GELU(x) with the tanh approximation.
void gelu_forward(float* out, const float* x, std::int64_t n, cudaStream_t stream);
// dx (n) = dout * GELU'(x); dx may be the same buffer as dout.
void gelu_backward(float* dx, const float* x, const float* dout, std::int64_t n, cudaStream_t stream);

// --- embedding (learned positions) ---
// x (N, C) = wte[tokens[r]] + wpe[r % S]; tokens (N) must lie in [0, V).
void embedding_forward(float* x, const std::int32_t* tokens, const float* wte, const float* wpe,
                       std::int64_t n_rows, std::int64_t seq, std::int64_t c, cudaStream_t stream);
// Accumulates dwte (V, C) rows of the tokens and dwpe (S, C) from dx (N, C), N = B * S.
void embedding_backward(float* dwte, float* dwpe, const float* dx, const std::int32_t* tokens,
                        std::int64_t batch, std::int64_t seq, std::int64_t c, cudaStream_t stream);

// --- LayerNorm over the last dimension (eps = runtime::kNormEps) ---
// y (N, C) = (x - mean) * rstd * w + b; writes mean (N) and rstd (N).
void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, std::int64_t n_rows, std::int64_t c, cudaStream_t stream);
// Accumulates dx (N, C), dw (C), db (C) from dy (N, C).
void layernorm_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                        const float* mean, const float* rstd, const float* w, std::int64_t n_rows,
                        std::int64_t c, cudaStream_t stream);

// --- attention helpers (the GEMMs run on cuBLASLt) ---
// dst (B, H, S, D) = the head columns [col0, col0 + H*D) of src (B*S, width).
void rows_to_heads(float* dst, const float* src, std::int64_t batch, std::int64_t seq,
                   std::int64_t heads, std::int64_t head_dim, std::int64_t width, std::int64_t col0,
                   cudaStream_t stream);
// Inverse: columns [col0, col0 + H*D) of dst (B*S, width) = src (B, H, S, D); the other
// columns of dst are left as they are.
void heads_to_rows(float* dst, const float* src, std::int64_t batch, std::int64_t seq,
                   std::int64_t heads, std::int64_t head_dim, std::int64_t width, std::int64_t col0,
                   cudaStream_t stream);
// In place on scores (B*H*S, S), already scaled: row r is query position i = r % S;
// p[j] = softmax over j <= i, p[j] = 0 for j > i.
void causal_softmax_forward(float* p, std::int64_t rows, std::int64_t seq, cudaStream_t stream);
// In place: dp (B*H*S, S) becomes the score gradient p * (dp - sum_j p * dp), 0 for j > i.
void causal_softmax_backward(float* dp, const float* p, std::int64_t rows, std::int64_t seq,
                             cudaStream_t stream);

// --- loss ---
// Softmax cross-entropy, fused with its backward: logits (N, V) are replaced in place by
// dlogits = (softmax - onehot(target)) * dloss; losses (N) = -log softmax[target].
void cross_entropy_forward_backward(float* logits, float* losses, const std::int32_t* targets,
                                    std::int64_t n_rows, std::int64_t vocab, float dloss,
                                    cudaStream_t stream);

// --- reductions into one double on the device ---
// *acc += scale * sum(x (n)).
void accumulate_sum(double* acc, const float* x, std::int64_t n, double scale, cudaStream_t stream);
// *acc += sum(x (n)^2).
void accumulate_sum_squares(double* acc, const float* x, std::int64_t n, cudaStream_t stream);

// --- optimizer ---
struct AdamWStep {
  float lr = 0, beta1 = 0, beta2 = 0, eps = 0;
  float weight_decay = 0;     // 0 for parameters without decay
  float bias_correction1 = 1, bias_correction2 = 1;  // 1 - beta^step
  float grad_scale = 1;       // clipping factor
};
// runtime::adamw_update on the device: p, m, v (n) updated from g (n) * grad_scale. When
// p_lp is not null it receives bf16(p) (the GEMM copy of the master weights).
void adamw_update(float* p, const float* g, float* m, float* v, void* p_lp, std::int64_t n,
                  const AdamWStep& s, cudaStream_t stream);

}  // namespace strata::runtime::gpu
