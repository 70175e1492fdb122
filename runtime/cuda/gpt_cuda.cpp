#include "runtime/cuda/gpt_cuda.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "common/errors.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/device_check.h"
#include "runtime/cuda/device_buffer.h"
#include "runtime/cuda/gpt_kernels.h"
#include "runtime/cuda/strided_batched_gemm.h"
#include "runtime/model_chunk.h"
#include "runtime/model_dims.h"
#include "runtime/parameter_store.h"

namespace strata::runtime {

namespace {

using gpu::DeviceBuffer;
using kernels::GemmDType;

// Device offsets of the parameters are rounded up to this many elements, so every weight
// (and its bf16 copy: 128 x 2 bytes) starts on a 256-byte boundary as cuBLASLt assumes.
constexpr std::size_t kParamAlign = 128;

std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

// Refuses what this trainer does not implement, before any device call.
ModelDims checked_dims(const models::ModelSpec& spec, const GptCudaConfig& cfg) {
  if (spec.norm != models::Norm::LayerNorm || spec.activation != models::Activation::Gelu ||
      spec.positions != models::Positions::Learned)
    input_error("model {}: the CUDA trainer runs GPT models only (norm layernorm, activation gelu, "
                "positions learned), got norm {}, activation {}, positions {}",
                spec.name, models::to_string(spec.norm), models::to_string(spec.activation),
                models::to_string(spec.positions));
  if (spec.kv_heads != 0 && spec.kv_heads != spec.heads)
    input_error("model {}: the CUDA trainer needs kv_heads ({}) == heads ({})", spec.name, spec.kv_heads,
                spec.heads);
  if (cfg.gemm_dtype == GemmDType::Fp16)
    input_error("gemm dtype fp16 is not supported by the CUDA trainer (it would need loss scaling); "
                "use bf16, tf32 or fp32");
  if (cfg.grad_clip < 0) input_error("grad_clip ({}) must be >= 0", cfg.grad_clip);
  if (spec.moe)
    input_error("model {} is a mixture-of-experts model: the CUDA trainer runs dense models only (train "
                "it on CPU ranks)", spec.name);
  return make_model_dims(spec, cfg.micro_batch, 1, 0, false, planner::Recompute::None);
}

ChunkLayout whole_model(std::int64_t layers) {
  ChunkLayout c;
  c.embedding = true;
  for (int b = 0; b < static_cast<int>(layers); ++b) c.blocks.push_back(b);
  c.head = true;
  return c;
}

}  // namespace

struct GptCudaTrainer::Impl {
  // The stream and the timing events (a member type of Impl rather than of the anonymous
  // namespace: Impl has external linkage, -Wsubobject-linkage), destroyed even when the trainer's constructor throws
  // half way (create() runs after this member is constructed).
  struct StreamAndEvents {
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, fb = nullptr, end = nullptr;
    void create() {
      STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      STRATA_CUDA_CHECK(cudaEventCreate(&start));
      STRATA_CUDA_CHECK(cudaEventCreate(&fb));
      STRATA_CUDA_CHECK(cudaEventCreate(&end));
    }
    StreamAndEvents() = default;
    StreamAndEvents(const StreamAndEvents&) = delete;
    StreamAndEvents& operator=(const StreamAndEvents&) = delete;
    ~StreamAndEvents() {
      if (start) cudaEventDestroy(start);
      if (fb) cudaEventDestroy(fb);
      if (end) cudaEventDestroy(end);
      if (stream) cudaStreamDestroy(stream);
    }
  };
  // One parameter tensor in the device buffers.
  struct Tensor {
    std::string name;
    std::size_t offset = 0;  // elements, multiple of kParamAlign
    std::size_t numel = 0;
    bool decay = false;
  };
  // What one block keeps from its forward for its backward (fp32).
  struct LayerActs {
    DeviceBuffer<float> ln1, ln1_mean, ln1_rstd;  // (N, C), (N), (N)
    DeviceBuffer<float> q, k, v;                  // (B, H, S, D) each
    DeviceBuffer<float> att;                      // (B, H, S, S) probabilities
    DeviceBuffer<float> atty;                     // (N, C) attention output, heads merged
    DeviceBuffer<float> x2;                       // (N, C) residual after attention
    DeviceBuffer<float> ln2, ln2_mean, ln2_rstd;  // (N, C), (N), (N)
    DeviceBuffer<float> fch, fcg;                 // (N, F) before and after GELU
  };
  // A GEMM operand: the fp32 tensor, and its bf16 copy when one is kept (weights).
  struct Operand {
    const float* f32 = nullptr;
    const std::uint16_t* lp = nullptr;
  };

  Impl(const models::ModelSpec& model, const GptCudaConfig& c);
  ~Impl();

  template <typename T>
  DeviceBuffer<T> alloc(std::size_t n) {
    DeviceBuffer<T> b(n);
    bytes += b.bytes();
    return b;
  }
  const Tensor& tensor(const std::string& name) const {
    auto it = index.find(name);
    STRATA_CHECK(it != index.end(), "unknown parameter {}", name);
    return tensors[it->second];
  }
  float* P(const std::string& name) { return params.get() + tensor(name).offset; }
  float* G(const std::string& name) { return grads.get() + tensor(name).offset; }
  Operand W(const std::string& name) {
    return {P(name), lowp ? params_lp.get() + tensor(name).offset : nullptr};
  }
  // Tensor `name` of `buffer` (the parameters or the gradients), copied to the host once
  // the stream's work is done.
  std::vector<float> download(const DeviceBuffer<float>& buffer, const std::string& name) const {
    const Tensor& t = tensor(name);
    std::vector<float> out(t.numel);
    STRATA_CUDA_CHECK(cudaStreamSynchronize(stream));
    STRATA_CUDA_CHECK(
        cudaMemcpy(out.data(), buffer.get() + t.offset, t.numel * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }

  void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, Operand a,
            Operand b, float beta, float* c, std::int64_t batch = 1);
  void raw_matmul(GemmDType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                  std::int64_t batch, float alpha, const void* a, const void* b, float beta, void* c);
  const std::uint16_t* to_lp(const Operand& x, std::int64_t count, DeviceBuffer<std::uint16_t>& scratch);
  void forward_backward(const std::int32_t* tok, const std::int32_t* tgt, float dloss);
  void copy(float* dst, const float* src, std::size_t n);

  models::ModelSpec spec;
  GptCudaConfig cfg;
  ModelDims dims;
  std::int64_t B = 0, S = 0, C = 0, H = 0, D = 0, F = 0, V = 0, L = 0, N = 0;
  bool lowp = false;  // bf16 GEMMs (operand conversions, bf16 weight copy)
  std::string lm_name;
  std::vector<Tensor> tensors;
  std::map<std::string, std::size_t> index;
  std::size_t param_elems = 0;   // padded device size
  std::int64_t model_params = 0;
  std::size_t bytes = 0;

  StreamAndEvents handles;
  cudaStream_t stream = nullptr;  // handles.stream
  std::unique_ptr<kernels::CublasLtGemm> gemm_lt;
  std::unique_ptr<gpu::StridedBatchedGemm> gemm_batched;

  DeviceBuffer<float> params, grads, exp_avg, exp_avg_sq;
  DeviceBuffer<std::uint16_t> params_lp;
  std::vector<DeviceBuffer<float>> residual;  // L + 1 of (N, C): block inputs, then the head input
  std::vector<LayerActs> acts;
  DeviceBuffer<float> qkv, o;                 // (N, 3C), (B, H, S, D) forward scratch
  DeviceBuffer<float> lnf, lnf_mean, lnf_rstd, logits, losses;  // head: (N, C), (N), (N), (N, V), (N)
  DeviceBuffer<float> dres, dbuf, dfc, dqkv, dq, dk, dv, d_o, dp;  // backward scratch
  DeviceBuffer<std::uint16_t> lp_a, lp_b, lp_c;  // bf16 GEMM operands and output
  std::size_t lp_capacity = 0;
  DeviceBuffer<std::int32_t> tokens_d, targets_d;
  DeviceBuffer<double> sums;  // [0] loss, [1] squared gradient norm

  std::int64_t step = 0;
  double grad_norm = 0;
  GptCudaStepTimes times;
};

GptCudaTrainer::Impl::Impl(const models::ModelSpec& model, const GptCudaConfig& c)
    : spec(model), cfg(c), dims(checked_dims(model, c)) {
  B = static_cast<std::int64_t>(dims.batch);
  S = static_cast<std::int64_t>(dims.seq);
  C = static_cast<std::int64_t>(dims.hidden);
  H = static_cast<std::int64_t>(dims.heads);
  D = static_cast<std::int64_t>(dims.head_dim);
  F = static_cast<std::int64_t>(dims.ffn);
  V = static_cast<std::int64_t>(dims.vocab);
  L = static_cast<std::int64_t>(dims.layers);
  N = B * S;
  lowp = cfg.gemm_dtype == GemmDType::Bf16;
  lm_name = dims.tied() ? "embedding.wte" : "head.lm_head.weight";

  // Parameters: the CPU runtime's specs and initial values (host), laid out with aligned
  // offsets on the device.
  ParameterStore<float> host;
  for (const auto& s : ModelChunk<float>::param_specs(dims, whole_model(L))) host.add(s);
  host.finalize();
  host.init(cfg.seed);
  std::size_t at = 0;
  for (const auto& e : host.entries()) {
    Tensor t;
    t.name = e.spec.name;
    t.offset = round_up(at, kParamAlign);
    t.numel = e.numel;
    t.decay = e.spec.weight_decay;
    at = t.offset + t.numel;
    index[t.name] = tensors.size();
    tensors.push_back(t);
    model_params += static_cast<std::int64_t>(e.numel);
  }
  param_elems = round_up(std::max<std::size_t>(at, 1), kParamAlign);
  std::vector<float> staged(param_elems, 0.0f);
  for (const auto& e : host.entries())
    std::copy_n(host.params().begin() + static_cast<std::ptrdiff_t>(e.offset), e.numel,
                staged.begin() + static_cast<std::ptrdiff_t>(tensor(e.spec.name).offset));

  if (kernels::cuda_device_count() == 0)
    throw DeviceError("the CUDA trainer needs a GPU: " + kernels::cuda_unavailable_reason());
  kernels::cuda_set_device(cfg.device);
  handles.create();
  stream = handles.stream;
  gemm_lt = std::make_unique<kernels::CublasLtGemm>();
  gemm_batched = std::make_unique<gpu::StridedBatchedGemm>();

  params = alloc<float>(param_elems);
  grads = alloc<float>(param_elems);
  exp_avg = alloc<float>(param_elems);
  exp_avg_sq = alloc<float>(param_elems);
  STRATA_CUDA_CHECK(cudaMemcpyAsync(params.get(), staged.data(), params.bytes(), cudaMemcpyHostToDevice, stream));
  STRATA_CUDA_CHECK(cudaMemsetAsync(grads.get(), 0, grads.bytes(), stream));
  STRATA_CUDA_CHECK(cudaMemsetAsync(exp_avg.get(), 0, exp_avg.bytes(), stream));
  STRATA_CUDA_CHECK(cudaMemsetAsync(exp_avg_sq.get(), 0, exp_avg_sq.bytes(), stream));
  if (lowp) {
    params_lp = alloc<std::uint16_t>(param_elems);
    gpu::f32_to_bf16(params_lp.get(), params.get(), static_cast<std::int64_t>(param_elems), stream);
  }

  const auto n = [](std::int64_t v) { return static_cast<std::size_t>(v); };
  for (std::int64_t l = 0; l <= L; ++l) residual.push_back(alloc<float>(n(N * C)));
  acts.resize(n(L));
  for (auto& a : acts) {
    a.ln1 = alloc<float>(n(N * C));
    a.ln1_mean = alloc<float>(n(N));
    a.ln1_rstd = alloc<float>(n(N));
    a.q = alloc<float>(n(N * C));
    a.k = alloc<float>(n(N * C));
    a.v = alloc<float>(n(N * C));
    a.att = alloc<float>(n(B * H * S * S));
    a.atty = alloc<float>(n(N * C));
    a.x2 = alloc<float>(n(N * C));
    a.ln2 = alloc<float>(n(N * C));
    a.ln2_mean = alloc<float>(n(N));
    a.ln2_rstd = alloc<float>(n(N));
    a.fch = alloc<float>(n(N * F));
    a.fcg = alloc<float>(n(N * F));
  }
  qkv = alloc<float>(n(N * 3 * C));
  o = alloc<float>(n(N * C));
  lnf = alloc<float>(n(N * C));
  lnf_mean = alloc<float>(n(N));
  lnf_rstd = alloc<float>(n(N));
  logits = alloc<float>(n(N * V));
  losses = alloc<float>(n(N));
  dres = alloc<float>(n(N * C));
  dbuf = alloc<float>(n(N * C));
  dfc = alloc<float>(n(N * F));
  dqkv = alloc<float>(n(N * 3 * C));
  dq = alloc<float>(n(N * C));
  dk = alloc<float>(n(N * C));
  dv = alloc<float>(n(N * C));
  d_o = alloc<float>(n(N * C));
  dp = alloc<float>(n(B * H * S * S));
  if (lowp) {
    // The largest operand or product of any GEMM of the step (see forward_backward).
    lp_capacity = n(std::max({N * V, V * C, B * H * S * S, N * F, F * C, N * 3 * C, 3 * C * C, N * C}));
    lp_a = alloc<std::uint16_t>(lp_capacity);
    lp_b = alloc<std::uint16_t>(lp_capacity);
    lp_c = alloc<std::uint16_t>(lp_capacity);
  }
  sums = alloc<double>(2);
  STRATA_CUDA_CHECK(cudaStreamSynchronize(stream));  // `staged` goes out of scope
}

GptCudaTrainer::Impl::~Impl() {
  // Work still queued may use the buffers the members' destructors free next.
  if (stream != nullptr) cudaStreamSynchronize(stream);
}

void GptCudaTrainer::Impl::copy(float* dst, const float* src, std::size_t count) {
  STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}

const std::uint16_t* GptCudaTrainer::Impl::to_lp(const Operand& x, std::int64_t count,
                                                 DeviceBuffer<std::uint16_t>& scratch) {
  if (x.lp != nullptr) return x.lp;
  STRATA_CHECK(static_cast<std::size_t>(count) <= lp_capacity, "bf16 operand of {} values > scratch {}",
               count, lp_capacity);
  gpu::f32_to_bf16(scratch.get(), x.f32, count, stream);
  return scratch.get();
}

void GptCudaTrainer::Impl::raw_matmul(GemmDType dt, bool ta, bool tb, std::int64_t m, std::int64_t n,
                                      std::int64_t k, std::int64_t batch, float alpha, const void* a,
                                      const void* b, float beta, void* c) {
  if (batch == 1) {
    gemm_lt->matmul(dt, ta, tb, m, n, k, alpha, a, b, beta, c, stream);
  } else if (cfg.batched_attention) {
    gemm_batched->matmul(dt, ta, tb, m, n, k, batch, alpha, a, m * k, b, k * n, beta, c, m * n, stream);
  } else {
    const std::int64_t es = kernels::element_bytes(dt);
    for (std::int64_t i = 0; i < batch; ++i)
      gemm_lt->matmul(dt, ta, tb, m, n, k, alpha, static_cast<const char*>(a) + i * m * k * es,
                      static_cast<const char*>(b) + i * k * n * es, beta,
                      static_cast<char*>(c) + i * m * n * es, stream);
  }
}

// c (batch x (m, n)) = alpha * op(a) op(b) + beta * c, fp32 in and out, operands compact
// (batch entries m*k, k*n, m*n values apart). With bf16 the operands go through bf16 and
// the product is rounded to bf16 before it reaches c (see the header).
void GptCudaTrainer::Impl::gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                float alpha, Operand a, Operand b, float beta, float* c,
                                std::int64_t batch) {
  if (!lowp) {
    raw_matmul(cfg.gemm_dtype, ta, tb, m, n, k, batch, alpha, a.f32, b.f32, beta, c);
    return;
  }
  const std::int64_t out = m * n * batch;
  STRATA_CHECK(static_cast<std::size_t>(out) <= lp_capacity, "bf16 product of {} values > scratch {}", out,
               lp_capacity);
  const std::uint16_t* a16 = to_lp(a, m * k * batch, lp_a);
  const std::uint16_t* b16 = to_lp(b, k * n * batch, lp_b);
  raw_matmul(GemmDType::Bf16, ta, tb, m, n, k, batch, alpha, a16, b16, 0.0f, lp_c.get());
  gpu::bf16_to_f32(c, lp_c.get(), beta, out, stream);
}

// Forward and backward of one micro-batch; tok and tgt (N) on the device. Adds the
// micro-batch's loss * dloss to sums[0] and its gradients to `grads`.
void GptCudaTrainer::Impl::forward_backward(const std::int32_t* tok, const std::int32_t* tgt, float dloss) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const std::int64_t BH = B * H;
  const auto blk = [](std::int64_t l, const char* what) { return fmt::format("blocks.{}.{}", l, what); };

  // ---- forward
  gpu::embedding_forward(residual[0].get(), tok, P("embedding.wte"), P("embedding.wpe"), N, S, C, stream);
  for (std::int64_t l = 0; l < L; ++l) {
    LayerActs& a = acts[static_cast<std::size_t>(l)];
    const float* x = residual[static_cast<std::size_t>(l)].get();
    float* out = residual[static_cast<std::size_t>(l + 1)].get();
    // attention: x2 = x + proj(attn(qkv(norm1(x))))
    gpu::layernorm_forward(a.ln1.get(), a.ln1_mean.get(), a.ln1_rstd.get(), x, P(blk(l, "norm1.weight")),
                           P(blk(l, "norm1.bias")), N, C, stream);
    gemm(false, true, N, 3 * C, C, 1.0f, {a.ln1.get()}, W(blk(l, "attn.qkv.weight")), 0.0f, qkv.get());
    gpu::add_bias(qkv.get(), P(blk(l, "attn.qkv.bias")), N, 3 * C, stream);
    gpu::rows_to_heads(a.q.get(), qkv.get(), B, S, H, D, 3 * C, 0, stream);
    gpu::rows_to_heads(a.k.get(), qkv.get(), B, S, H, D, 3 * C, C, stream);
    gpu::rows_to_heads(a.v.get(), qkv.get(), B, S, H, D, 3 * C, 2 * C, stream);
    gemm(false, true, S, S, D, scale, {a.q.get()}, {a.k.get()}, 0.0f, a.att.get(), BH);  // q k^T / sqrt(D)
    gpu::causal_softmax_forward(a.att.get(), BH * S, S, stream);
    gemm(false, false, S, D, S, 1.0f, {a.att.get()}, {a.v.get()}, 0.0f, o.get(), BH);  // p v
    gpu::heads_to_rows(a.atty.get(), o.get(), B, S, H, D, C, 0, stream);
    copy(a.x2.get(), x, static_cast<std::size_t>(N * C));
    gemm(false, true, N, C, C, 1.0f, {a.atty.get()}, W(blk(l, "attn.proj.weight")), 1.0f, a.x2.get());
    gpu::add_bias(a.x2.get(), P(blk(l, "attn.proj.bias")), N, C, stream);
    // MLP: out = x2 + proj(gelu(fc(norm2(x2))))
    gpu::layernorm_forward(a.ln2.get(), a.ln2_mean.get(), a.ln2_rstd.get(), a.x2.get(),
                           P(blk(l, "norm2.weight")), P(blk(l, "norm2.bias")), N, C, stream);
    gemm(false, true, N, F, C, 1.0f, {a.ln2.get()}, W(blk(l, "mlp.fc.weight")), 0.0f, a.fch.get());
    gpu::add_bias(a.fch.get(), P(blk(l, "mlp.fc.bias")), N, F, stream);
    gpu::gelu_forward(a.fcg.get(), a.fch.get(), N * F, stream);
    copy(out, a.x2.get(), static_cast<std::size_t>(N * C));
    gemm(false, true, N, C, F, 1.0f, {a.fcg.get()}, W(blk(l, "mlp.proj.weight")), 1.0f, out);
    gpu::add_bias(out, P(blk(l, "mlp.proj.bias")), N, C, stream);
  }
  // head: logits = norm_f(x) W_lm^T, then the loss and dlogits in place
  const float* xf = residual[static_cast<std::size_t>(L)].get();
  gpu::layernorm_forward(lnf.get(), lnf_mean.get(), lnf_rstd.get(), xf, P("head.norm.weight"),
                         P("head.norm.bias"), N, C, stream);
  gemm(false, true, N, V, C, 1.0f, {lnf.get()}, W(lm_name), 0.0f, logits.get());
  gpu::cross_entropy_forward_backward(logits.get(), losses.get(), tgt, N, V, dloss, stream);
  gpu::accumulate_sum(sums.get(), losses.get(), N, static_cast<double>(dloss), stream);

  // ---- backward (dres: gradient of the residual stream, accumulated through the norms)
  STRATA_CUDA_CHECK(cudaMemsetAsync(dres.get(), 0, dres.bytes(), stream));
  gemm(false, false, N, C, V, 1.0f, {logits.get()}, W(lm_name), 0.0f, dbuf.get());      // dlnf = dlogits W
  gemm(true, false, V, C, N, 1.0f, {logits.get()}, {lnf.get()}, 1.0f, G(lm_name));       // dW += dlogits^T lnf
  gpu::layernorm_backward(dres.get(), G("head.norm.weight"), G("head.norm.bias"), dbuf.get(), xf,
                          lnf_mean.get(), lnf_rstd.get(), P("head.norm.weight"), N, C, stream);
  for (std::int64_t l = L - 1; l >= 0; --l) {
    LayerActs& a = acts[static_cast<std::size_t>(l)];
    const float* x = residual[static_cast<std::size_t>(l)].get();
    // MLP (dres = d out)
    gpu::bias_grad(G(blk(l, "mlp.proj.bias")), dres.get(), N, C, stream);
    gemm(false, false, N, F, C, 1.0f, {dres.get()}, W(blk(l, "mlp.proj.weight")), 0.0f, dfc.get());
    gemm(true, false, C, F, N, 1.0f, {dres.get()}, {a.fcg.get()}, 1.0f, G(blk(l, "mlp.proj.weight")));
    gpu::gelu_backward(dfc.get(), a.fch.get(), dfc.get(), N * F, stream);
    gpu::bias_grad(G(blk(l, "mlp.fc.bias")), dfc.get(), N, F, stream);
    gemm(false, false, N, C, F, 1.0f, {dfc.get()}, W(blk(l, "mlp.fc.weight")), 0.0f, dbuf.get());
    gemm(true, false, F, C, N, 1.0f, {dfc.get()}, {a.ln2.get()}, 1.0f, G(blk(l, "mlp.fc.weight")));
    gpu::layernorm_backward(dres.get(), G(blk(l, "norm2.weight")), G(blk(l, "norm2.bias")), dbuf.get(),
                            a.x2.get(), a.ln2_mean.get(), a.ln2_rstd.get(), P(blk(l, "norm2.weight")), N, C,
                            stream);
    // attention (dres = d x2)
    gpu::bias_grad(G(blk(l, "attn.proj.bias")), dres.get(), N, C, stream);
    gemm(false, false, N, C, C, 1.0f, {dres.get()}, W(blk(l, "attn.proj.weight")), 0.0f, dbuf.get());
    gemm(true, false, C, C, N, 1.0f, {dres.get()}, {a.atty.get()}, 1.0f, G(blk(l, "attn.proj.weight")));
    gpu::rows_to_heads(d_o.get(), dbuf.get(), B, S, H, D, C, 0, stream);
    gemm(false, true, S, S, D, 1.0f, {d_o.get()}, {a.v.get()}, 0.0f, dp.get(), BH);     // dP = dO V^T
    gemm(true, false, S, D, S, 1.0f, {a.att.get()}, {d_o.get()}, 0.0f, dv.get(), BH);   // dV = P^T dO
    gpu::causal_softmax_backward(dp.get(), a.att.get(), BH * S, S, stream);
    gemm(false, false, S, D, S, scale, {dp.get()}, {a.k.get()}, 0.0f, dq.get(), BH);    // dQ = scale dS K
    gemm(true, false, S, D, S, scale, {dp.get()}, {a.q.get()}, 0.0f, dk.get(), BH);     // dK = scale dS^T Q
    gpu::heads_to_rows(dqkv.get(), dq.get(), B, S, H, D, 3 * C, 0, stream);
    gpu::heads_to_rows(dqkv.get(), dk.get(), B, S, H, D, 3 * C, C, stream);
    gpu::heads_to_rows(dqkv.get(), dv.get(), B, S, H, D, 3 * C, 2 * C, stream);
    gpu::bias_grad(G(blk(l, "attn.qkv.bias")), dqkv.get(), N, 3 * C, stream);
    gemm(false, false, N, C, 3 * C, 1.0f, {dqkv.get()}, W(blk(l, "attn.qkv.weight")), 0.0f, dbuf.get());
    gemm(true, false, 3 * C, C, N, 1.0f, {dqkv.get()}, {a.ln1.get()}, 1.0f, G(blk(l, "attn.qkv.weight")));
    gpu::layernorm_backward(dres.get(), G(blk(l, "norm1.weight")), G(blk(l, "norm1.bias")), dbuf.get(), x,
                            a.ln1_mean.get(), a.ln1_rstd.get(), P(blk(l, "norm1.weight")), N, C, stream);
  }
  gpu::embedding_backward(G("embedding.wte"), G("embedding.wpe"), dres.get(), tok, B, S, C, stream);
}

GptCudaTrainer::GptCudaTrainer(const models::ModelSpec& spec, const GptCudaConfig& cfg)
    : impl_(std::make_unique<Impl>(spec, cfg)) {}

GptCudaTrainer::~GptCudaTrainer() = default;

double GptCudaTrainer::train_step(const std::int32_t* tokens, const std::int32_t* targets, int micro_batches,
                                  float lr) {
  Impl& m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  if (micro_batches < 1) input_error("micro_batches ({}) must be >= 1", micro_batches);
  const std::int64_t total = m.N * micro_batches;
  for (std::int64_t i = 0; i < total; ++i) {
    if (tokens[i] < 0 || tokens[i] >= m.V)
      input_error("tokens[{}] = {} is outside the vocabulary [0, {})", i, tokens[i], m.V);
    if (targets[i] < 0 || targets[i] >= m.V)
      input_error("targets[{}] = {} is outside the vocabulary [0, {})", i, targets[i], m.V);
  }
  if (m.tokens_d.size() < static_cast<std::size_t>(total)) {
    STRATA_CUDA_CHECK(cudaStreamSynchronize(m.stream));  // old buffers may still be in use
    m.bytes -= m.tokens_d.bytes() + m.targets_d.bytes();
    m.tokens_d = m.alloc<std::int32_t>(static_cast<std::size_t>(total));
    m.targets_d = m.alloc<std::int32_t>(static_cast<std::size_t>(total));
  }
  // One copy for all micro-batches: a copy from pageable memory waits for the stream.
  const std::size_t token_bytes = static_cast<std::size_t>(total) * sizeof(std::int32_t);
  STRATA_CUDA_CHECK(cudaMemcpyAsync(m.tokens_d.get(), tokens, token_bytes, cudaMemcpyHostToDevice, m.stream));
  STRATA_CUDA_CHECK(cudaMemcpyAsync(m.targets_d.get(), targets, token_bytes, cudaMemcpyHostToDevice, m.stream));

  STRATA_CUDA_CHECK(cudaEventRecord(m.handles.start, m.stream));
  STRATA_CUDA_CHECK(cudaMemsetAsync(m.grads.get(), 0, m.grads.bytes(), m.stream));
  STRATA_CUDA_CHECK(cudaMemsetAsync(m.sums.get(), 0, m.sums.bytes(), m.stream));
  const float dloss = 1.0f / static_cast<float>(total);  // token weight: 1 / tokens of the step
  for (int mb = 0; mb < micro_batches; ++mb)
    m.forward_backward(m.tokens_d.get() + mb * m.N, m.targets_d.get() + mb * m.N, dloss);
  STRATA_CUDA_CHECK(cudaEventRecord(m.handles.fb, m.stream));

  // Global gradient norm (padding elements are zero), clipping factor as runtime/trainer.cpp.
  gpu::accumulate_sum_squares(m.sums.get() + 1, m.grads.get(), static_cast<std::int64_t>(m.param_elems), m.stream);
  double sums[2] = {0, 0};
  STRATA_CUDA_CHECK(cudaMemcpyAsync(sums, m.sums.get(), sizeof(sums), cudaMemcpyDeviceToHost, m.stream));
  STRATA_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  m.grad_norm = std::sqrt(sums[1]);
  float clip_scale = 1.0f;
  if (m.cfg.grad_clip > 0 && m.grad_norm > m.cfg.grad_clip)
    clip_scale = static_cast<float>(m.cfg.grad_clip / (m.grad_norm + 1e-6));

  ++m.step;
  const AdamWConfig& a = m.cfg.adamw;
  gpu::AdamWStep st;
  st.lr = lr;
  st.beta1 = static_cast<float>(a.beta1);
  st.beta2 = static_cast<float>(a.beta2);
  st.eps = static_cast<float>(a.eps);
  st.bias_correction1 = static_cast<float>(1.0 - std::pow(a.beta1, static_cast<double>(m.step)));
  st.bias_correction2 = static_cast<float>(1.0 - std::pow(a.beta2, static_cast<double>(m.step)));
  st.grad_scale = clip_scale;
  for (const auto& t : m.tensors) {
    st.weight_decay = t.decay ? static_cast<float>(a.weight_decay) : 0.0f;
    gpu::adamw_update(m.params.get() + t.offset, m.grads.get() + t.offset, m.exp_avg.get() + t.offset,
                      m.exp_avg_sq.get() + t.offset, m.lowp ? m.params_lp.get() + t.offset : nullptr,
                      static_cast<std::int64_t>(t.numel), st, m.stream);
  }
  STRATA_CUDA_CHECK(cudaEventRecord(m.handles.end, m.stream));
  STRATA_CUDA_CHECK(cudaEventSynchronize(m.handles.end));
  float fb_ms = 0, end_ms = 0;
  STRATA_CUDA_CHECK(cudaEventElapsedTime(&fb_ms, m.handles.start, m.handles.fb));
  STRATA_CUDA_CHECK(cudaEventElapsedTime(&end_ms, m.handles.start, m.handles.end));
  m.times.forward_backward_s = fb_ms / 1e3;
  m.times.optimizer_s = (end_ms - fb_ms) / 1e3;
  m.times.step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sums[0];
}

std::int64_t GptCudaTrainer::step() const { return impl_->step; }
double GptCudaTrainer::last_grad_norm() const { return impl_->grad_norm; }
const GptCudaStepTimes& GptCudaTrainer::last_times() const { return impl_->times; }
std::int64_t GptCudaTrainer::num_params() const { return impl_->model_params; }
std::size_t GptCudaTrainer::device_bytes() const { return impl_->bytes; }
const models::ModelSpec& GptCudaTrainer::spec() const { return impl_->spec; }

std::vector<std::string> GptCudaTrainer::param_names() const {
  std::vector<std::string> out;
  for (const auto& t : impl_->tensors) out.push_back(t.name);
  return out;
}

std::vector<float> GptCudaTrainer::param(const std::string& name) const { return impl_->download(impl_->params, name); }

std::vector<float> GptCudaTrainer::grad(const std::string& name) const { return impl_->download(impl_->grads, name); }

}  // namespace strata::runtime
