// Notes on where a prediction's numbers came from (SimEngine::notes): the stack and its
// sources, the uncertainty band, the compute dtype and peak, which GEMM / block / op /
// collective tables were used or what stood in for them, context parallel and the SMs the
// overlapped DP collectives hold, and the memory model's bytes per parameter. Text only:
// nothing here changes a time.
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/op_cost.h"
#include "costmodel/prediction_band.h"
#include "costmodel/training_losses.h"
#include "planner/detail/sim_engine.h"

namespace strata::planner::detail {

using costmodel::Collective;
using costmodel::DType;

std::vector<std::string> SimEngine::notes(const Strategy& s) {
  const Placement& pl = placement_for(s);
  const GroupCostTable& t = costs_for(s, pl);
  const auto& dev = cluster_.device;
  auto ref = [](const costmodel::Provenance& p) {
    for (const char* k : {"ref", "url", "tool", "host"}) {
      auto it = p.fields.find(k);
      if (it != p.fields.end()) return it->second;
    }
    return std::string(p.kind.empty() ? "unspecified" : p.kind);
  };
  std::vector<std::string> n;
  n.push_back(fmt::format("stack {} ({}): attention {}, {}, TP overlap {}, DP grad reduce {}, "
                          "pipeline p2p {} (`strata stacks` lists the sources)",
                          stack_.name, stack_.description, costmodel::to_string(stack_.attention),
                          costmodel::to_string(stack_.precision),
                          stack_.overlap_tp_comm ? "userbuffers" : stack_.overlap_tp_backward ? "backward only" : "none",
                          stack_.overlap_grad_reduce ? "overlapped" : "after the backward",
                          costmodel::to_string(stack_.p2p)));
  {
    const costmodel::PredictionBand& band = band_for(s);
    if (band.relative)
      n.push_back(fmt::format("uncertainty: published runs took {:.2f}x to {:.2f}x the predicted step time "
                              "(band includes 1x): {}",
                              band.low, band.high, band.basis));
    for (const auto& w : band.warnings) n.push_back("warning: " + w);
  }
  n.push_back(fmt::format("compute dtype {} on {} ({} peak {:.4g} TFLOP/s: {})",
                          costmodel::to_string(dtype_), dev.name, costmodel::to_string(dtype_),
                          dev.peak_flops(dtype_) / 1e12, ref(dev.source)));
  if (fp8_)
    n.push_back(fmt::format(
        "precision fp8: QKV, attention output and MLP GEMMs at the fp8 rate (peak {:.4g} TFLOP/s; "
        "the profile's fp8 rows, never faster than the bf16 time of the shape x peak ratio), "
        "attention core, LM head and optimizer in {} / fp32 as Transformer Engine under "
        "Megatron-Core runs them; casts to FP8 as memory passes (4 B per cast element), an FP8 "
        "weight copy and its transpose (2 B per weight); MFU is against the {} peak",
        dev.peak_flops(DType::Fp8) / 1e12, costmodel::to_string(dtype_), costmodel::to_string(dtype_)));
  if (t.gemm_measured && !t.gemm_roofline)
    n.push_back(fmt::format("GEMM times: {} table ({})",
                            dev.gemm_source.kind == "published" ? "published" : "measured",
                            ref(dev.gemm_source)));
  else if (t.gemm_measured)
    n.push_back(fmt::format("GEMM times: measured table ({}) where it covers the shape, else "
                            "roofline at {:.0f}% of datasheet peak",
                            ref(dev.gemm_source), dev.gemm_efficiency * 100));
  else
    n.push_back(fmt::format("GEMM times: roofline at {:.0f}% of datasheet peak (no measured table)",
                            dev.gemm_efficiency * 100));
  if (t.blocks_measured)
    n.push_back(fmt::format("transformer blocks: measured block_table ({}: the runtime's whole block, all ranks "
                            "at once{}); per-op times for the embedding, head and loss",
                            ref(dev.block_source),
                            t.tp_blocks_measured ? ", TP communication with a real group" : ""));
  std::set<std::string> measured_ops;
  for (const auto& r : dev.op_table) measured_ops.insert(r.op);
  if (!measured_ops.empty())
    n.push_back(fmt::format("non-GEMM ops {}: measured op_table ({})", fmt::join(measured_ops, ", "),
                            ref(dev.op_source)));
  n.push_back(fmt::format("{}attention at {:.0f}% of peak, elementwise/optimizer at {:.0f}% of "
                          "{:.0f} GB/s ({})",
                          measured_ops.empty() ? "" : "otherwise: ", costmodel::attention_efficiency(dev, stack_.attention) * 100,
                          dev.memory_efficiency * 100, dev.memory_bandwidth_gbps,
                          dev.source.measured() || dev.efficiency_source.measured() ? "measured" : "datasheet"));
  if (stack_.attention == costmodel::AttentionKernel::Flash1 && dev.attention_flash1_efficiency <= 0)
    n.push_back(fmt::format("warning: stack {} runs FlashAttention's first algorithm (attention.kernel flash1), "
                            "for which device {} gives no rate (efficiency.attention_flash1): timed at "
                            "FlashAttention-2's, so attention is predicted too fast",
                            stack_.name, dev.name));
  // The training losses a fitted profile applies (costmodel/training_losses.h), by name and
  // value, so that no fitted number acts unseen.
  if (const costmodel::TrainingLosses& l = dev.training_losses; l.present) {
    std::vector<std::string> applied;
    const auto& ps = costmodel::loss_parameters();
    for (std::size_t i = 0; i < ps.size(); ++i)
      if (l.status[i] != "neutral")
        applied.push_back(fmt::format("{} {:.3g} {}({})", ps[i].name, l.value[i],
                                      std::string(ps[i].unit) == "1" ? "" : std::string(ps[i].unit) + " ",
                                      l.status[i]));
    n.push_back(fmt::format("training losses applied on {}: {}", dev.name, fmt::join(applied, ", ")));
  }
  // MFU counts QK^T and AV over the whole s x s matrix (Korthikanti et al. 2022, Eq. 7; the
  // PaLM appendix B count), while a causal flash kernel runs only its lower half: at long
  // sequences MFU then overstates what the GPUs execute, past what attention's efficiency allows.
  if (stack_.flash_like()) {
    double attention = 0, all = 0;
    for (const auto& c : t.groups) {
      attention += 3 * c.attn_flops_fwd;  // forward + backward (2x) in the model-FLOP count
      all += c.flops_fwd + c.flops_bwd;
    }
    const double share = all > 0 ? attention / all : 0;
    if (share > 1.0 / 3.0)
      n.push_back(fmt::format(
          "warning: attention's s x s FLOPs are {:.0f}% of the model FLOPs at sequence {}; MFU counts them in "
          "full (Korthikanti et al. 2022), the causal kernel runs {:.0f}% of them, so the GPUs execute {:.2f}x "
          "the FLOPs MFU counts (hardware TFLOP/s counts what they execute)",
          100 * share, model_.seq_len, 100 * costmodel::kCausalAttentionFraction,
          1 - share * (1 - costmodel::kCausalAttentionFraction)));
  }
  auto link_text = [&](const costmodel::LinkSpec& l) {
    std::string t = fmt::format("{:.4g} GB/s", l.bandwidth_gbps);
    if (l.efficiency != 1.0) {
      auto e = l.source.fields.find("efficiency");
      t += fmt::format(" x {:.3g} NCCL efficiency ({})", l.efficiency,
                       e == l.source.fields.end() ? "no source" : e->second);
    }
    return t + ": " + ref(l.source);
  };
  std::string links = "intra-node " + link_text(cluster_.intra_node);
  if (cluster_.nodes > 1) links += "; inter-node " + link_text(cluster_.inter_node);
  n.push_back(fmt::format(
      "collectives: {} ({})",
      (t.tp_measured ||
       coll_.estimate(Collective::AllReduce, 64.0 * 1024 * 1024, pl.dp).source !=
           costmodel::TimeSource::Roofline)
          ? fmt::format("{} table where available ({}), alpha-beta otherwise",
                        dev.collective_source.kind == "published" ? "published" : "measured",
                        ref(dev.collective_source))
          : std::string("alpha-beta model"),
      links));
  if (s.cp > 1)
    n.push_back(fmt::format(
        "context parallel {}: {} K/V exchange on a CP group of {} ranks over {} node(s) "
        "(stack cp_comm_type); attention on 2x{} load-balanced causal chunks; activations and "
        "logits /{}; gradients reduced over dp x cp = {} ranks",
        s.cp, costmodel::to_string(stack_.cp_comm), pl.cp.size, pl.cp.nodes_spanned, s.cp, s.cp,
        s.dp * s.cp));
  // ZeRO-2/3 gathers and reduce-scatters always run beside the compute that hides them.
  if (s.dp * s.cp > 1 && (stack_.overlap_grad_reduce || stack_.overlap_param_gather || s.zero >= 2)) {
    const double share = costmodel::comm_sm_share(cluster_, pl.dp);
    const costmodel::LinkSpec& l = pl.dp.nodes_spanned > 1 ? cluster_.inter_node : cluster_.intra_node;
    const char* what = s.zero >= 2 ? "overlapped DP and ZeRO collectives" : "overlapped DP collectives";
    if (share > 0)
      n.push_back(fmt::format("{} hold {} of {} SMs: compute beside them runs {:.0f}% slower ({})", what,
                              l.comm_sms, cluster_.device.sm_count, 100 * share,
                              l.source.fields.count("comm_sms") ? l.source.fields.at("comm_sms") : "no source"));
    else if (cluster_.device.sm_count > 0)
      n.push_back(fmt::format("{}: their SM use is not charged (the cluster's link gives no comm_sms)", what));
  }
  // The memory model's bytes per parameter before ZeRO sharding (costmodel/memory_model.h).
  const double grad_buffer = costmodel::dtype_bytes(stack_.grad_reduce_dtype);
  const double fp32_copy = costmodel::optimizer_grad_copy_bytes(grad_buffer);
  n.push_back(fmt::format("memory: Korthikanti et al. 2022 activations, {:g} B/param mixed-precision Adam "
                          "(2 weights + {:g} {} gradient buffer{} + 12 fp32 optimizer state), reserve from the "
                          "device profile",
                          14.0 + grad_buffer + fp32_copy, grad_buffer,
                          costmodel::to_string(stack_.grad_reduce_dtype),
                          fp32_copy > 0 ? " + 4 its fp32 copy for the optimizer step, held only while the "
                                          "activations are freed" : ""));
  if (moe_pads_to_capacity() && stack_.moe_host_sync)
    n.push_back("host-synced MoE forward: not charged: with a capacity factor every expert's input is padded to "
                "its capacity (drop and pad), so the dispatcher knows its sizes without reading the routing to the "
                "host (Megatron-Core token_dispatcher.py at d98e8a64: drop_and_pad returns before any sync point)");
  else if (model_.moe && stack_.moe_host_sync && dev.training_losses.moe_host_s() > 0)
    n.push_back(fmt::format(
        "host-synced MoE forward: the stack's dispatcher reads the routing to the host every MoE layer, so "
        "each MoE layer's forward takes at least moe_host_ms = {:.3g} ms of CPU issue ({}; fitted on "
        "Qwen3-235B layouts with 4-16 local experts, taken per layer whatever its local experts: Transformer "
        "Engine's GroupedLinear issues all of them in one grouped-GEMM call, a view, a dtype check and a "
        "cuBLAS launch each; not checked on a published run of a model with 1-2 local experts); the 'host "
        "wait' line is what it adds",
        dev.training_losses.moe_host_s() * 1e3,
        dev.training_losses.status[static_cast<std::size_t>(costmodel::loss_parameter_index("moe_host_ms"))]));
  return n;
}

}  // namespace strata::planner::detail
