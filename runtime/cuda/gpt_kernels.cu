// Device kernels of the GPT training step (see gpt_kernels.h for the shapes). Written
// for obvious correctness first: grid-stride loops for elementwise work, one block per
// row for the row reductions (LayerNorm, softmax, cross-entropy), and (32 x 8)-thread
// tiles with one atomicAdd per column and tile for the column sums (bias and LayerNorm
// parameter gradients). All reductions accumulate in fp32 except the loss and the
// gradient norm, which accumulate in double as the CPU runtime does.
#include "runtime/cuda/gpt_kernels.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda/device_check.h"
#include "runtime/norm.h"

namespace strata::runtime::gpu {
namespace {

constexpr int kThreads = 256;  // threads of every 1-D block here; a multiple of the warp size
constexpr int kWarp = 32;
// Column-sum tiles: kColTile columns (one warp, coalesced along a row) x kRowLanes rows.
constexpr int kColTile = 32;
constexpr int kRowLanes = 8;
constexpr int kMaxGrid = 65535;  // grid-stride loops cover the rest; also gridDim.y's limit

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi), as runtime/activation.cpp
constexpr float kGeluCubic = 0.044715f;

int elementwise_blocks(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::clamp<std::int64_t>(blocks, 1, kMaxGrid));
}

void check_launch() { STRATA_CUDA_CHECK(cudaGetLastError()); }

__device__ inline std::int64_t global_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_threads() {
  return static_cast<std::int64_t>(blockDim.x) * gridDim.x;
}

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename T, typename Op>
__device__ T warp_reduce(T v, Op op) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Reduction over the whole block; every thread receives the result. blockDim.x must be a
// multiple of 32 (at most 1024), and every thread of the block must call it: it
// synchronizes. The leading __syncthreads keeps a second call from overwriting `partial`
// while a slow warp still reads the first call's values.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity) {
  __shared__ T partial[kWarp];
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  v = warp_reduce(v, op);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : identity;
  return warp_reduce(v, op);
}

// Rows per column-sum tile so that gridDim.y stays within its limit.
std::int64_t rows_per_tile(std::int64_t rows) {
  return std::max<std::int64_t>(256, (rows + kMaxGrid - 1) / kMaxGrid);
}

// ---------------------------------------------------------------------------- kernels

__global__ void f32_to_bf16_kernel(__nv_bfloat16* dst, const float* src, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) dst[i] = __float2bfloat16(src[i]);
}

__global__ void bf16_to_f32_kernel(float* c, const __nv_bfloat16* src, float beta, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float v = __bfloat162float(src[i]);
    c[i] = beta == 0.0f ? v : beta * c[i] + v;
  }
}

__global__ void add_bias_kernel(float* y, const float* b, std::int64_t n, std::int64_t cols) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) y[i] += b[i % cols];
}

// out (cols) += column sums of in (rows, cols). Block (kColTile, kRowLanes); block
// (bx, by) sums columns [bx * kColTile, +kColTile) over rows [by * rows_per_block, +rows_per_block).
__global__ void column_sum_kernel(float* out, const float* in, std::int64_t rows, std::int64_t cols,
                                  std::int64_t rows_per_block) {
  __shared__ float part[kRowLanes][kColTile + 1];
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * rows_per_block;
  const std::int64_t r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
  float acc = 0.0f;
  if (c < cols)
    for (std::int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) acc += in[r * cols + c];
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float s = 0.0f;
    for (int k = 0; k < kRowLanes; ++k) s += part[k][threadIdx.x];
    atomicAdd(out + c, s);
  }
}

__global__ void gelu_forward_kernel(float* out, const float* x, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float v = x[i];
    out[i] = 0.5f * v * (1.0f + tanhf(kGeluScale * (v + kGeluCubic * v * v * v)));
  }
}

// dx may alias dout: each element is read and then written by the same thread.
__global__ void gelu_backward_kernel(float* dx, const float* x, const float* dout, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float v = x[i];
    const float th = tanhf(kGeluScale * (v + kGeluCubic * v * v * v));
    const float sech2 = 1.0f - th * th;
    const float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v);
    dx[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * v * sech2 * du);
  }
}

__global__ void embedding_forward_kernel(float* x, const std::int32_t* tokens, const float* wte,
                                         const float* wpe, std::int64_t n, std::int64_t seq,
                                         std::int64_t c) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    const std::int64_t r = i / c, col = i % c;
    const std::int64_t tok = tokens[r];
    x[i] = wte[tok * c + col] + wpe[(r % seq) * c + col];
  }
}

// dwpe (S, C) += sum over the batch of dx (B, S, C): one thread per (t, col), no atomics.
__global__ void position_grad_kernel(float* dwpe, const float* dx, std::int64_t batch,
                                     std::int64_t seq, std::int64_t c) {
  const std::int64_t n = seq * c;
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    float s = 0.0f;
    for (std::int64_t b = 0; b < batch; ++b) s += dx[b * n + i];  // (b*S + t)*C + col = b*n + i
    dwpe[i] += s;
  }
}

// dwte[tokens[r]] += dx[r]: one block per token row; atomics because tokens repeat.
__global__ void token_grad_kernel(float* dwte, const float* dx, const std::int32_t* tokens,
                                  std::int64_t c) {
  const std::int64_t r = blockIdx.x;
  const std::int64_t tok = tokens[r];
  for (std::int64_t col = threadIdx.x; col < c; col += blockDim.x)
    atomicAdd(dwte + tok * c + col, dx[r * c + col]);
}

// One block per row; two passes (mean, then variance) like runtime/norm.cpp.
__global__ void layernorm_forward_kernel(float* y, float* mean, float* rstd, const float* x,
                                         const float* w, const float* b, std::int64_t c, float eps) {
  const std::int64_t r = blockIdx.x;
  const float* xr = x + r * c;
  float s = 0.0f;
  for (std::int64_t i = threadIdx.x; i < c; i += blockDim.x) s += xr[i];
  const float m = block_reduce(s, SumOp{}, 0.0f) / static_cast<float>(c);
  float v = 0.0f;
  for (std::int64_t i = threadIdx.x; i < c; i += blockDim.x) {
    const float d = xr[i] - m;
    v += d * d;
  }
  const float var = block_reduce(v, SumOp{}, 0.0f) / static_cast<float>(c);
  const float rs = 1.0f / sqrtf(var + eps);
  float* yr = y + r * c;
  for (std::int64_t i = threadIdx.x; i < c; i += blockDim.x) yr[i] = (xr[i] - m) * rs * w[i] + b[i];
  if (threadIdx.x == 0) {
    mean[r] = m;
    rstd[r] = rs;
  }
}

// dx (N, C) += rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * w.
// One block per row.
__global__ void layernorm_backward_dx_kernel(float* dx, const float* dy, const float* x,
                                             const float* mean, const float* rstd, const float* w,
                                             std::int64_t c) {
  const std::int64_t r = blockIdx.x;
  const float* dyr = dy + r * c;
  const float* xr = x + r * c;
  const float m = mean[r], s = rstd[r];
  float sum_dxhat = 0.0f, sum_dxhat_xhat = 0.0f;
  for (std::int64_t i = threadIdx.x; i < c; i += blockDim.x) {
    const float xhat = (xr[i] - m) * s;
    const float dxhat = dyr[i] * w[i];
    sum_dxhat += dxhat;
    sum_dxhat_xhat += dxhat * xhat;
  }
  const float mean_dxhat = block_reduce(sum_dxhat, SumOp{}, 0.0f) / static_cast<float>(c);
  const float mean_dxhat_xhat = block_reduce(sum_dxhat_xhat, SumOp{}, 0.0f) / static_cast<float>(c);
  float* dxr = dx + r * c;
  for (std::int64_t i = threadIdx.x; i < c; i += blockDim.x) {
    const float xhat = (xr[i] - m) * s;
    const float dxhat = dyr[i] * w[i];
    dxr[i] += s * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat);
  }
}

// dw (C) += sum_r dy * xhat, db (C) += sum_r dy: the column_sum_kernel tiling.
__global__ void layernorm_param_grad_kernel(float* dw, float* db, const float* dy, const float* x,
                                            const float* mean, const float* rstd, std::int64_t rows,
                                            std::int64_t c, std::int64_t rows_per_block) {
  __shared__ float part_w[kRowLanes][kColTile + 1];
  __shared__ float part_b[kRowLanes][kColTile + 1];
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * rows_per_block;
  const std::int64_t r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
  float acc_w = 0.0f, acc_b = 0.0f;
  if (col < c)
    for (std::int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) {
      const float g = dy[r * c + col];
      acc_w += g * (x[r * c + col] - mean[r]) * rstd[r];
      acc_b += g;
    }
  part_w[threadIdx.y][threadIdx.x] = acc_w;
  part_b[threadIdx.y][threadIdx.x] = acc_b;
  __syncthreads();
  if (threadIdx.y == 0 && col < c) {
    float sw = 0.0f, sb = 0.0f;
    for (int k = 0; k < kRowLanes; ++k) {
      sw += part_w[k][threadIdx.x];
      sb += part_b[k][threadIdx.x];
    }
    atomicAdd(dw + col, sw);
    atomicAdd(db + col, sb);
  }
}

// Index i of the heads layout (B, H, S, D) -> element of the rows layout (B*S, width).
__device__ inline std::int64_t heads_to_rows_index(std::int64_t i, std::int64_t seq,
                                                   std::int64_t heads, std::int64_t head_dim,
                                                   std::int64_t width, std::int64_t col0) {
  const std::int64_t d = i % head_dim;
  const std::int64_t t = (i / head_dim) % seq;
  const std::int64_t h = (i / (head_dim * seq)) % heads;
  const std::int64_t b = i / (head_dim * seq * heads);
  return (b * seq + t) * width + col0 + h * head_dim + d;
}

__global__ void rows_to_heads_kernel(float* dst, const float* src, std::int64_t n, std::int64_t seq,
                                     std::int64_t heads, std::int64_t head_dim, std::int64_t width,
                                     std::int64_t col0) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads())
    dst[i] = src[heads_to_rows_index(i, seq, heads, head_dim, width, col0)];
}

__global__ void heads_to_rows_kernel(float* dst, const float* src, std::int64_t n, std::int64_t seq,
                                     std::int64_t heads, std::int64_t head_dim, std::int64_t width,
                                     std::int64_t col0) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads())
    dst[heads_to_rows_index(i, seq, heads, head_dim, width, col0)] = src[i];
}

// Either head permute above over all batch * seq * heads * head_dim elements.
template <typename Kernel>
void launch_head_permute(Kernel kernel, float* dst, const float* src, std::int64_t batch, std::int64_t seq,
                         std::int64_t heads, std::int64_t head_dim, std::int64_t width, std::int64_t col0,
                         cudaStream_t stream) {
  const std::int64_t n = batch * seq * heads * head_dim;
  if (n <= 0) return;
  kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(dst, src, n, seq, heads, head_dim, width, col0);
  check_launch();
}

// One block per score row. Every element j is read and rewritten by the same thread
// (j = threadIdx.x + k * blockDim.x) in each pass, so the passes need no barrier beyond
// the ones inside block_reduce.
__global__ void causal_softmax_forward_kernel(float* p, std::int64_t seq) {
  const std::int64_t r = blockIdx.x;
  const std::int64_t last = r % seq;  // query position: keys 0..last are visible
  float* pr = p + r * seq;
  float mx = -INFINITY;
  for (std::int64_t j = threadIdx.x; j <= last; j += blockDim.x) mx = fmaxf(mx, pr[j]);
  mx = block_reduce(mx, MaxOp{}, -INFINITY);
  float s = 0.0f;
  for (std::int64_t j = threadIdx.x; j <= last; j += blockDim.x) {
    const float e = expf(pr[j] - mx);
    pr[j] = e;
    s += e;
  }
  s = block_reduce(s, SumOp{}, 0.0f);  // >= 1: the maximum contributes exp(0)
  const float inv = 1.0f / s;
  for (std::int64_t j = threadIdx.x; j < seq; j += blockDim.x) pr[j] = j <= last ? pr[j] * inv : 0.0f;
}

__global__ void causal_softmax_backward_kernel(float* dp, const float* p, std::int64_t seq) {
  const std::int64_t r = blockIdx.x;
  const std::int64_t last = r % seq;
  float* dpr = dp + r * seq;
  const float* pr = p + r * seq;
  float dot = 0.0f;
  for (std::int64_t j = threadIdx.x; j <= last; j += blockDim.x) dot += pr[j] * dpr[j];
  dot = block_reduce(dot, SumOp{}, 0.0f);
  for (std::int64_t j = threadIdx.x; j < seq; j += blockDim.x)
    dpr[j] = j <= last ? pr[j] * (dpr[j] - dot) : 0.0f;
}

// One block per token row. The target logit is read by every thread before the first
// barrier (inside block_reduce); the logits are overwritten only in the last pass, each
// by the thread that read it.
__global__ void cross_entropy_kernel(float* logits, float* losses, const std::int32_t* targets,
                                     std::int64_t vocab, float dloss) {
  const std::int64_t r = blockIdx.x;
  float* lr = logits + r * vocab;
  const std::int64_t target = targets[r];
  const float target_logit = lr[target];
  float mx = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) mx = fmaxf(mx, lr[j]);
  mx = block_reduce(mx, MaxOp{}, -INFINITY);
  float s = 0.0f;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) s += expf(lr[j] - mx);
  s = block_reduce(s, SumOp{}, 0.0f);
  const float inv = 1.0f / s;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float prob = expf(lr[j] - mx) * inv;
    lr[j] = prob * dloss - (j == target ? dloss : 0.0f);
  }
  if (threadIdx.x == 0) losses[r] = logf(s) - (target_logit - mx);
}

// Launched with one block.
__global__ void accumulate_sum_kernel(double* acc, const float* x, std::int64_t n, double scale) {
  double s = 0.0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) s += static_cast<double>(x[i]);
  s = block_reduce(s, SumOp{}, 0.0);
  if (threadIdx.x == 0) *acc += scale * s;
}

__global__ void accumulate_sum_squares_kernel(double* acc, const float* x, std::int64_t n) {
  double s = 0.0;
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    const double v = x[i];
    s += v * v;
  }
  s = block_reduce(s, SumOp{}, 0.0);
  if (threadIdx.x == 0) atomicAdd(acc, s);
}

// The arithmetic of runtime/adamw.cpp, element by element.
__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, __nv_bfloat16* p_lp,
                             std::int64_t n, AdamWStep s) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float gi = g[i] * s.grad_scale;
    const float mi = s.beta1 * m[i] + (1.0f - s.beta1) * gi;
    const float vi = s.beta2 * v[i] + (1.0f - s.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float mhat = mi / s.bias_correction1, vhat = vi / s.bias_correction2;
    const float pi = p[i] - s.lr * (mhat / (sqrtf(vhat) + s.eps) + s.weight_decay * p[i]);
    p[i] = pi;
    if (p_lp != nullptr) p_lp[i] = __float2bfloat16(pi);
  }
}

}  // namespace

// ---------------------------------------------------------------------------- launchers

void f32_to_bf16(void* dst_lp, const float* src, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  f32_to_bf16_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(dst_lp), src, n);
  check_launch();
}

void bf16_to_f32(float* c, const void* src_lp, float beta, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  bf16_to_f32_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(
      c, static_cast<const __nv_bfloat16*>(src_lp), beta, n);
  check_launch();
}

void add_bias(float* y, const float* b, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  const std::int64_t n = rows * cols;
  if (n <= 0) return;
  add_bias_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(y, b, n, cols);
  check_launch();
}

void bias_grad(float* db, const float* dy, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const std::int64_t per = rows_per_tile(rows);
  const dim3 grid(static_cast<unsigned>((cols + kColTile - 1) / kColTile),
                  static_cast<unsigned>((rows + per - 1) / per));
  column_sum_kernel<<<grid, dim3(kColTile, kRowLanes), 0, stream>>>(db, dy, rows, cols, per);
  check_launch();
}

void gelu_forward(float* out, const float* x, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  gelu_forward_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(out, x, n);
  check_launch();
}

void gelu_backward(float* dx, const float* x, const float* dout, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  gelu_backward_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(dx, x, dout, n);
  check_launch();
}

void embedding_forward(float* x, const std::int32_t* tokens, const float* wte, const float* wpe,
                       std::int64_t n_rows, std::int64_t seq, std::int64_t c, cudaStream_t stream) {
  const std::int64_t n = n_rows * c;
  if (n <= 0) return;
  embedding_forward_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(x, tokens, wte, wpe, n, seq, c);
  check_launch();
}

void embedding_backward(float* dwte, float* dwpe, const float* dx, const std::int32_t* tokens,
                        std::int64_t batch, std::int64_t seq, std::int64_t c, cudaStream_t stream) {
  if (batch <= 0 || seq <= 0 || c <= 0) return;
  position_grad_kernel<<<elementwise_blocks(seq * c), kThreads, 0, stream>>>(dwpe, dx, batch, seq, c);
  check_launch();
  token_grad_kernel<<<static_cast<unsigned>(batch * seq), kThreads, 0, stream>>>(dwte, dx, tokens, c);
  check_launch();
}

void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, std::int64_t n_rows, std::int64_t c, cudaStream_t stream) {
  if (n_rows <= 0) return;
  layernorm_forward_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(
      y, mean, rstd, x, w, b, c, static_cast<float>(kNormEps));
  check_launch();
}

void layernorm_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                        const float* mean, const float* rstd, const float* w, std::int64_t n_rows,
                        std::int64_t c, cudaStream_t stream) {
  if (n_rows <= 0 || c <= 0) return;
  const std::int64_t per = rows_per_tile(n_rows);
  const dim3 grid(static_cast<unsigned>((c + kColTile - 1) / kColTile),
                  static_cast<unsigned>((n_rows + per - 1) / per));
  layernorm_param_grad_kernel<<<grid, dim3(kColTile, kRowLanes), 0, stream>>>(dw, db, dy, x, mean, rstd,
                                                                               n_rows, c, per);
  check_launch();
  layernorm_backward_dx_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(dx, dy, x, mean,
                                                                                       rstd, w, c);
  check_launch();
}

void rows_to_heads(float* dst, const float* src, std::int64_t batch, std::int64_t seq,
                   std::int64_t heads, std::int64_t head_dim, std::int64_t width, std::int64_t col0,
                   cudaStream_t stream) {
  launch_head_permute(rows_to_heads_kernel, dst, src, batch, seq, heads, head_dim, width, col0, stream);
}

void heads_to_rows(float* dst, const float* src, std::int64_t batch, std::int64_t seq,
                   std::int64_t heads, std::int64_t head_dim, std::int64_t width, std::int64_t col0,
                   cudaStream_t stream) {
  launch_head_permute(heads_to_rows_kernel, dst, src, batch, seq, heads, head_dim, width, col0, stream);
}

void causal_softmax_forward(float* p, std::int64_t rows, std::int64_t seq, cudaStream_t stream) {
  if (rows <= 0) return;
  causal_softmax_forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(p, seq);
  check_launch();
}

void causal_softmax_backward(float* dp, const float* p, std::int64_t rows, std::int64_t seq,
                             cudaStream_t stream) {
  if (rows <= 0) return;
  causal_softmax_backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(dp, p, seq);
  check_launch();
}

void cross_entropy_forward_backward(float* logits, float* losses, const std::int32_t* targets,
                                    std::int64_t n_rows, std::int64_t vocab, float dloss,
                                    cudaStream_t stream) {
  if (n_rows <= 0) return;
  cross_entropy_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(logits, losses, targets,
                                                                               vocab, dloss);
  check_launch();
}

void accumulate_sum(double* acc, const float* x, std::int64_t n, double scale, cudaStream_t stream) {
  if (n <= 0) return;
  accumulate_sum_kernel<<<1, kThreads, 0, stream>>>(acc, x, n, scale);
  check_launch();
}

void accumulate_sum_squares(double* acc, const float* x, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  accumulate_sum_squares_kernel<<<std::min(elementwise_blocks(n), 4096), kThreads, 0, stream>>>(acc, x, n);
  check_launch();
}

void adamw_update(float* p, const float* g, float* m, float* v, void* p_lp, std::int64_t n,
                  const AdamWStep& s, cudaStream_t stream) {
  if (n <= 0) return;
  adamw_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(p, g, m, v, static_cast<__nv_bfloat16*>(p_lp),
                                                               n, s);
  check_launch();
}

}  // namespace strata::runtime::gpu
