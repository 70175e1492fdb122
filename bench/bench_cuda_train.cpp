// Single-GPU GPT training throughput of runtime/cuda's GptCudaTrainer: a model from the
// catalog (default gpt2-124m) on synthetic tokens, one line per step with the loss,
// milliseconds, tokens/s and MFU. Figures only, never pass/fail.
//
//   strata_bench_cuda_train [--model gpt2-124m] [--micro-batch 8] [--grad-accum 1]
//                           [--steps 10] [--dtype bf16|tf32|fp32] [--lr 6e-4]
//                           [--device-profile h200-sxm-141gb]
//
// MFU = model FLOPs per token x tokens/s / peak, with model FLOPs per token
// 6 * params + 12 * layers * hidden * seq (forward + backward of every weight, plus the
// attention scores and weighted sum over the full S x S square, not the causal half, as
// PaLM and llm.c count them), and the dense peak of --dtype read from the device profile (default the
// H200 SXM datasheet in costmodel/hardware/h200-sxm-141gb.yaml, 989.4 TFLOP/s bf16).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "common/errors.h"
#include "costmodel/device_profile.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/gemm_dtype.h"
#include "models/model_spec.h"
#include "runtime/cuda/gpt_cuda.h"
#include "runtime/data_loader.h"
#include "strata_build_commit.h"  // STRATA_GIT_COMMIT, written at build time

namespace {

struct Options {
  std::string model = "gpt2-124m";
  std::int64_t micro_batch = 8;
  int grad_accum = 1;
  int steps = 10;
  std::string dtype = "bf16";
  double lr = 6e-4;
  std::string device_profile = "h200-sxm-141gb";
};

const char* kUsage =
    "usage: strata_bench_cuda_train [--model NAME] [--micro-batch N] [--grad-accum N] [--steps N]\n"
    "                               [--dtype bf16|tf32|fp32] [--lr X] [--device-profile NAME]\n";

std::int64_t positive_int(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 1)
    strata::input_error("{} ({}) must be an integer >= 1", flag, v);
  return n;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) strata::input_error("{} needs a value\n{}", flag, kUsage);
    const std::string v = argv[++i];
    if (flag == "--model") o.model = v;
    else if (flag == "--micro-batch") o.micro_batch = positive_int(flag, v);
    else if (flag == "--grad-accum") o.grad_accum = static_cast<int>(positive_int(flag, v));
    else if (flag == "--steps") o.steps = static_cast<int>(positive_int(flag, v));
    else if (flag == "--dtype") o.dtype = v;
    else if (flag == "--device-profile") o.device_profile = v;
    else if (flag == "--lr") {
      char* end = nullptr;
      o.lr = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.lr > 0)) strata::input_error("--lr ({}) must be a number > 0", v);
    } else {
      strata::input_error("unknown flag {}\n{}", flag, kUsage);
    }
  }
  if (o.dtype != "bf16" && o.dtype != "tf32" && o.dtype != "fp32")
    strata::input_error("--dtype ({}) must be bf16, tf32 or fp32", o.dtype);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  namespace sr = strata::runtime;
  namespace sk = strata::kernels;
  try {
    const Options opt = parse(argc, argv);
    if (sk::cuda_device_count() == 0) {
      std::fprintf(stderr, "error: strata_bench_cuda_train needs a CUDA GPU: %s\n",
                   sk::cuda_unavailable_reason().c_str());
      return 1;
    }
    const strata::models::ModelSpec spec = strata::models::load_model(opt.model);
    const sk::GemmDType dtype = sk::gemm_dtype_from_string(opt.dtype);
    const strata::costmodel::DeviceProfile profile = strata::costmodel::load_device_profile(opt.device_profile);
    const double peak_flops = profile.peak_flops(strata::costmodel::dtype_from_string(opt.dtype));

    sr::GptCudaConfig cfg;
    cfg.micro_batch = opt.micro_batch;
    cfg.gemm_dtype = dtype;
    sr::GptCudaTrainer trainer(spec, cfg);

    const sk::CudaDeviceInfo dev = sk::cuda_device_info(0);
    const std::int64_t seqs = opt.micro_batch * opt.grad_accum;
    const std::int64_t tokens_per_step = seqs * spec.seq_len;
    const double params = static_cast<double>(trainer.num_params());
    const double attn_flops = 12.0 * static_cast<double>(spec.layers) * static_cast<double>(spec.hidden) *
                              static_cast<double>(spec.seq_len);
    const double flops_per_token = 6.0 * params + attn_flops;

    std::printf("# strata_bench_cuda_train %s (%s, %s build)\n", STRATA_VERSION, STRATA_GIT_COMMIT, STRATA_BUILD_TYPE);
    std::printf("# device: %s, %.0f GiB, %d SMs, cc %d.%d; %s\n", dev.name.c_str(), dev.memory_gib, dev.sm_count,
                dev.cc_major, dev.cc_minor, sk::cuda_library_versions().c_str());
    std::printf("# model: %s  layers %lld  hidden %lld  heads %lld  ffn %lld  vocab %lld  seq %lld  params %.0f\n",
                spec.name.c_str(), static_cast<long long>(spec.layers), static_cast<long long>(spec.hidden),
                static_cast<long long>(spec.heads), static_cast<long long>(spec.ffn),
                static_cast<long long>(spec.vocab), static_cast<long long>(spec.seq_len), params);
    std::printf("# batch: micro_batch %lld x grad_accum %d = %lld sequences = %lld tokens/step; gemm %s, "
                "activations/master weights/AdamW fp32; lr %g; synthetic tokens\n",
                static_cast<long long>(opt.micro_batch), opt.grad_accum, static_cast<long long>(seqs),
                static_cast<long long>(tokens_per_step), opt.dtype.c_str(), opt.lr);
    std::printf("# model FLOPs/token = 6 * params + 12 * layers * hidden * seq = %.4g\n", flops_per_token);
    std::printf("# MFU peak: %.1f TFLOP/s dense %s from device profile %s (%s)\n", peak_flops / 1e12,
                opt.dtype.c_str(), profile.name.c_str(), opt.device_profile.c_str());
    std::printf("# trainer device memory: %.2f GiB\n", static_cast<double>(trainer.device_bytes()) / (1u << 30));
    if (dev.name.find("H200") == std::string::npos && opt.device_profile == "h200-sxm-141gb")
      std::fprintf(stderr, "***WARNING*** device is %s but MFU uses the %s peak (pass --device-profile)\n",
                   dev.name.c_str(), opt.device_profile.c_str());

    const sr::DataLoader data = sr::DataLoader::synthetic(spec.vocab, spec.seq_len, cfg.seed);
    const auto S = static_cast<std::size_t>(spec.seq_len);
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(tokens_per_step)), targets(tokens.size());
    std::printf("%6s %10s %10s %10s %10s %10s %12s %9s %7s\n", "step", "loss", "grad_norm", "step_ms", "fwdbwd_ms",
                "optim_ms", "tokens/s", "TFLOP/s", "MFU");
    double sum_s = 0;
    int timed = 0;
    for (int step = 0; step < opt.steps; ++step) {
      for (std::int64_t i = 0; i < seqs; ++i)
        data.sample(step * seqs + i, tokens.data() + static_cast<std::size_t>(i) * S,
                    targets.data() + static_cast<std::size_t>(i) * S);
      const double loss = trainer.train_step(tokens.data(), targets.data(), opt.grad_accum, static_cast<float>(opt.lr));
      const sr::GptCudaStepTimes& t = trainer.last_times();
      const double tps = static_cast<double>(tokens_per_step) / t.step_s;
      const double tflops = flops_per_token * tps / 1e12;
      std::printf("%6d %10.4f %10.4f %10.2f %10.2f %10.2f %12.0f %9.1f %6.1f%%\n", step + 1, loss,
                  trainer.last_grad_norm(), t.step_s * 1e3, t.forward_backward_s * 1e3, t.optimizer_s * 1e3, tps,
                  tflops, 100.0 * tflops * 1e12 / peak_flops);
      std::fflush(stdout);
      if (step > 0 || opt.steps == 1) {  // step 1 also pays cuBLASLt's heuristic queries
        sum_s += t.step_s;
        ++timed;
      }
    }
    const double mean_s = sum_s / timed;
    const double tps = static_cast<double>(tokens_per_step) / mean_s;
    std::printf("# mean over %d step(s)%s: %.2f ms/step, %.0f tokens/s, %.1f TFLOP/s, MFU %.1f%% of %.1f TFLOP/s %s\n",
                timed, opt.steps > 1 ? " (step 1 excluded)" : "", mean_s * 1e3, tps, flops_per_token * tps / 1e12,
                100.0 * flops_per_token * tps / peak_flops, peak_flops / 1e12, opt.dtype.c_str());
  } catch (const strata::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
