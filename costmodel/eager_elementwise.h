// EagerElementwise: the memory traffic and kernel launches of the elementwise parts of a
// transformer block written as plain PyTorch ops and run eagerly (one kernel per op, each
// reading and writing whole tensors), as TorchTitan's Llama runs without torch.compile
// (stack torchtitan-2024). The fused stacks run each of these as one kernel; these counts
// replace the fused ones when the stack says the part is not fused (software_stack.h).
//
// Bytes are per element of the op's main tensor with a 2-byte (bf16) activation; per-row
// tensors (the RMS statistic, the RoPE frequencies) are small and left out.
#pragma once
#include <cstdint>

namespace strata::costmodel {

struct EagerWork {
  double fwd_bytes_per_element = 0, bwd_bytes_per_element = 0;
  int fwd_kernels = 0, bwd_kernels = 0;
};

// RMSNorm composed of tensor ops in fp32 (pytorch/torchtitan torchtitan/models/norms.py,
// RMSNorm.forward: `self._norm(x.float()).type_as(x) * self.weight`, with _norm
// `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)`; Hugging Face's LlamaRMSNorm is
// the same composition). Forward, bytes read + written per element: x.float() 2 + 4,
// pow 4 + 4, mean 4, x * rsqrt 4 + 4, type_as 4 + 2, * weight 2 + 2 = 36 B in 8 kernels
// (with the per-row add and rsqrt). Backward (autograd of that chain): * weight: dx 2 + 2
// and the weight gradient's product and row sum 2 + 2 + 2 + 2; type_as 2 + 4; x * r: the
// input gradient 4 + 4 and the statistic's product and row sum 4 + 4 + 4 + 4; pow 4 + 4 +
// 4; the two gradients' sum 4 + 4 + 4; float() 4 + 2 = 72 B in about 11 kernels. A fused
// RMSNorm moves 4 B forward and 8 B backward (models/model_graph.cpp).
inline constexpr EagerWork kComposedRmsNorm{36.0, 72.0, 8, 11};

// RoPE as a complex multiply (torchtitan/models/llama/model.py apply_rotary_emb:
// view_as_complex(x.float()), multiply by freqs_cis, view_as_real, type_as(x)), per
// element of Q and of K: float() 2 + 4, complex multiply 4 + 4, type_as 4 + 2 = 20 B in
// 3 kernels; its backward the same three passes in reverse (2 + 4, 4 + 4, 4 + 2). The
// views are free. A fused RoPE kernel moves 4 B forward (read and write) and 8 B backward.
inline constexpr EagerWork kComplexRope{20.0, 20.0, 3, 3};

// The copies an attention module written with tensor ops makes around the attention
// kernel (torchtitan/models/llama/model.py Attention.forward): repeat_kv expands K and V
// from kv_heads to heads and reshapes, which copies (read the kv_heads tensor, write the
// heads one; no copy when kv_heads == heads), and the output is made contiguous after the
// head transpose (read + write). Backward: the repeat's gradient sums the copies back
// (read heads, write kv_heads) and the contiguous copy's gradient is one copy. Bytes for
// one rank: tokens x width elements of 2 bytes.
struct AttentionCopyWork {
  double fwd_bytes = 0, bwd_bytes = 0;
  int fwd_kernels = 0, bwd_kernels = 0;
};
inline AttentionCopyWork attention_layout_copies(double tokens, double q_width, double kv_width) {
  AttentionCopyWork w;
  const double out_copy = 2.0 * 2.0 * tokens * q_width;  // read + write, 2 B
  w.fwd_bytes = w.bwd_bytes = out_copy;
  w.fwd_kernels = w.bwd_kernels = 1;
  if (kv_width < q_width) {  // K and V each: read kv_width, write q_width (and back)
    const double repeat = 2.0 * 2.0 * tokens * (q_width + kv_width);
    w.fwd_bytes += repeat;
    w.bwd_bytes += repeat;
    w.fwd_kernels += 2;
    w.bwd_kernels += 2;
  }
  return w;
}

}  // namespace strata::costmodel
