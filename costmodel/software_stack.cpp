#include "costmodel/software_stack.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "common/enum_names.h"
#include "common/errors.h"
#include "common/yaml_reader.h"
#include "costmodel/detail/catalog_lookup.h"

namespace strata::costmodel {

namespace detail {
const EmbeddedFiles& embedded_stacks();
}  // namespace detail

const char* to_string(AttentionKernel k) {
  constexpr EnumName<AttentionKernel> kNames[] = {
      {AttentionKernel::Unfused, "unfused"}, {AttentionKernel::Flash2, "flash2"},
      {AttentionKernel::Flash1, "flash1"}, {AttentionKernel::Cudnn, "cudnn"}};
  return enum_name(k, kNames);
}

const char* to_string(P2pMode p) {
  constexpr EnumName<P2pMode> kNames[] = {
      {P2pMode::Blocking, "blocking"}, {P2pMode::Async, "async"}, {P2pMode::AsyncInterleaved, "async_interleaved"}};
  return enum_name(p, kNames);
}

constexpr EnumName<MoeDispatcher> kMoeDispatcherNames[] = {
    {MoeDispatcher::AllToAll, "alltoall"}, {MoeDispatcher::AllGather, "allgather"}, {MoeDispatcher::DeepEp, "deepep"}};

const char* to_string(MoeDispatcher d) { return enum_name(d, kMoeDispatcherNames); }

const char* to_string(Zero3Gather g) {
  constexpr EnumName<Zero3Gather> kNames[] = {{Zero3Gather::Block, "block"}, {Zero3Gather::Module, "module"}};
  return enum_name(g, kNames);
}

namespace {

// The newest stack of the catalog: the default on GPU devices.
constexpr const char* kNewestGpuStack = "nemo-2024";

std::string source_text(const YamlReader& s) {
  s.expect_map();
  s.expect_keys({"ref", "commit", "status", "note", "url"});
  std::string out = s.get_string("ref");
  if (out.empty()) s.fail("ref", "must not be empty");
  std::vector<std::string> extra;
  if (s.has("commit")) extra.push_back("commit " + s.get_string("commit"));
  if (s.has("status")) extra.push_back("status " + s.get_enum("status", {"P", "T", "F", "D", "inferred"}));
  if (!extra.empty()) {
    out += " (";
    for (std::size_t i = 0; i < extra.size(); ++i) out += (i ? "; " : "") + extra[i];
    out += ")";
  }
  if (s.has("url")) out += " <" + s.get_string("url") + ">";
  if (s.has("note")) out += ": " + s.get_string("note");
  return out;
}

}  // namespace

SoftwareStack parse_software_stack(const std::string& yaml_text, const std::string& source) {
  YamlReader r(parse_yaml(yaml_text, source), source);
  r.expect_map();
  r.expect_keys({"name", "description", "framework", "version", "precision", "grad_reduce_dtype", "grad_comm_dtype", "zero1_grad_collective",
                 "attention", "fusions", "overlap", "grad_bucket_params", "optimizer",
                 "distributed_optimizer", "kernel_overhead_us", "cp_comm_type", "zero_prefetch",
                 "zero3_recompute_regather", "zero3_gather", "zero3_persist_params", "zero3_gather_bucket_params", "zero3_fetch_host_us",
                 "grad_buffer", "fp8_params", "moe_dispatcher", "moe_host_sync", "moe_shared_expert_overlap", "moe_probs_in_activation", "fp8_tp_all_gather", "sp_collective_copies", "sp_backward_regather", "loss_bytes_per_logit", "sharded_params_fp32", "supports", "sources",
                 "selective_recompute_modules"});
  SoftwareStack s;
  s.file = source;
  s.name = r.get_string("name");
  if (s.name.empty()) r.fail("name", "must not be empty");
  for (char c : s.name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      r.fail("name", "may hold only letters, digits, '-', '_' and '.'");
  s.description = r.get_string("description", "");
  s.framework = r.get_string("framework", "");
  s.version = r.get_string("version", "");
  s.precision = dtype_from_string(r.get_enum("precision", {"bf16", "fp16", "tf32", "fp32"}));
  s.grad_reduce_dtype =
      dtype_from_string(r.get_enum("grad_reduce_dtype", {"bf16", "fp16", "tf32", "fp32"}, "fp32"));
  s.grad_comm_dtype = r.has("grad_comm_dtype")
                          ? dtype_from_string(r.get_enum("grad_comm_dtype", {"bf16", "fp16", "fp32"}))
                          : s.grad_reduce_dtype;
  s.zero1_grad_all_reduce =
      r.get_enum("zero1_grad_collective", {"reduce_scatter", "all_reduce"}, "reduce_scatter") == "all_reduce";

  YamlReader a = r.child("attention");
  a.expect_keys({"kernel", "softmax_fused", "dropout", "layout_copies"});
  const std::string kernel = a.get_enum("kernel", {"unfused", "flash2", "flash1", "cudnn"});
  s.attention = kernel == "unfused"  ? AttentionKernel::Unfused
                : kernel == "flash2" ? AttentionKernel::Flash2
                : kernel == "flash1" ? AttentionKernel::Flash1
                                     : AttentionKernel::Cudnn;
  s.softmax_fused = a.get_bool("softmax_fused", true);
  s.attention_dropout = a.get_double("dropout", 0.0);
  s.attention_layout_copies = a.get_bool("layout_copies", false);
  if (!(s.attention_dropout >= 0 && s.attention_dropout < 1))
    a.fail("dropout", fmt::format("{} must be in [0, 1)", s.attention_dropout));

  if (r.has("fusions")) {
    YamlReader f = r.child("fusions");
    f.expect_keys({"bias_gelu", "bias_dropout_add", "layernorm", "grad_accumulation", "cross_entropy", "rope"});
    s.fused_grad_accumulation = f.get_bool("grad_accumulation", true);
    s.fused_bias_gelu = f.get_bool("bias_gelu", true);
    s.fused_bias_dropout_add = f.get_bool("bias_dropout_add", true);
    s.fused_layernorm = f.get_bool("layernorm", true);
    s.fused_rope = f.get_bool("rope", true);
    s.fused_cross_entropy = f.get_bool("cross_entropy", false);
  }
  YamlReader o = r.child("overlap");
  o.expect_keys({"tp_comm", "tp_backward", "grad_reduce", "param_gather", "p2p", "tp_comm_sms"});
  s.overlap_tp_comm = o.get_bool("tp_comm");
  s.overlap_tp_backward = o.get_bool("tp_backward", false);
  s.tp_comm_sms = static_cast<int>(o.get_int_in("tp_comm_sms", 0, 1024, 0));
  s.overlap_grad_reduce = o.get_bool("grad_reduce");
  s.overlap_param_gather = o.get_bool("param_gather");
  const std::string p2p = o.get_enum("p2p", {"blocking", "async", "async_interleaved"});
  s.p2p = p2p == "blocking" ? P2pMode::Blocking
          : p2p == "async"  ? P2pMode::Async
                            : P2pMode::AsyncInterleaved;

  s.grad_bucket_params = r.get_int_in("grad_bucket_params", -1, std::int64_t{1} << 50, -1);
  s.optimizer = r.get_string("optimizer", "fused_adam");
  s.distributed_optimizer = r.get_bool("distributed_optimizer", false);
  s.kernel_overhead_us = r.get_double("kernel_overhead_us", -1.0);
  s.fp8_params = r.get_bool("fp8_params", false);
  if (r.has("selective_recompute_modules")) {
    const YamlReader list = r.child("selective_recompute_modules");
    list.expect_sequence();
    std::vector<std::string> names;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list.element(i).node().IsScalar()) r.fail("selective_recompute_modules", "must be a list of module names");
      names.push_back(list.element(i).node().as<std::string>());
    }
    try {
      s.selective_recompute = recompute_modules_from_names(names);
    } catch (const InputError& e) {
      r.fail("selective_recompute_modules", e.what());
    }
  }
  s.moe_dispatcher =
      *enum_from_name(r.get_enum("moe_dispatcher", {"alltoall", "allgather", "deepep"}, "alltoall"), kMoeDispatcherNames);
  s.moe_host_sync = r.get_bool("moe_host_sync", false);
  s.moe_shared_expert_overlap = r.get_bool("moe_shared_expert_overlap", false);
  // Megatron-Core refuses the shared experts' overlap with the allgather dispatcher
  // (TransformerConfig.__post_init__ at d98e8a64: alltoall or flex only).
  if (s.moe_shared_expert_overlap && s.moe_dispatcher == MoeDispatcher::AllGather)
    r.fail("moe_shared_expert_overlap", "needs moe_dispatcher alltoall or deepep (Megatron-Core runs the shared "
                                        "experts' overlap with the alltoall or flex dispatcher only)");
  s.moe_probs_in_activation = r.get_bool("moe_probs_in_activation", false);
  s.fp8_tp_all_gather = r.get_bool("fp8_tp_all_gather", false);
  s.sp_collective_copies = r.get_bool("sp_collective_copies", false);
  s.sp_backward_regather = r.get_bool("sp_backward_regather", true);
  s.sharded_params_fp32 = r.get_bool("sharded_params_fp32", false);
  if (r.has("loss_bytes_per_logit")) {
    s.loss_bytes_per_logit = r.get_double("loss_bytes_per_logit");
    if (!(s.loss_bytes_per_logit >= 1 && s.loss_bytes_per_logit <= 32))
      r.fail("loss_bytes_per_logit", fmt::format("{} must be in [1, 32] bytes", s.loss_bytes_per_logit));
  }
  if (r.has("kernel_overhead_us") && !(s.kernel_overhead_us >= 0 && s.kernel_overhead_us < 1e4))
    r.fail("kernel_overhead_us", fmt::format("{} must be in [0, 10000)", s.kernel_overhead_us));

  s.cp_comm = cp_comm_type_from_string(
      r.get_enum("cp_comm_type", {"p2p", "all_gather", "allgather"}, "p2p"));
  s.zero_prefetch = r.get_bool("zero_prefetch", true);
  s.zero3_recompute_regather = r.get_bool("zero3_recompute_regather", true);
  s.zero3_gather =
      r.get_enum("zero3_gather", {"block", "module"}, "block") == "module" ? Zero3Gather::Module : Zero3Gather::Block;
  s.zero3_persist_params = r.get_double("zero3_persist_params", 0.0);
  if (!(s.zero3_persist_params >= 0 && s.zero3_persist_params < 1e12))
    r.fail("zero3_persist_params", fmt::format("{} must be in [0, 1e12)", s.zero3_persist_params));
  s.zero3_gather_bucket_params = r.get_double("zero3_gather_bucket_params", 0.0);
  if (!(s.zero3_gather_bucket_params >= 0 && s.zero3_gather_bucket_params < 1e12))
    r.fail("zero3_gather_bucket_params", fmt::format("{} must be in [0, 1e12)", s.zero3_gather_bucket_params));
  s.zero3_fetch_host_us = r.get_double("zero3_fetch_host_us", 0.0);
  if (!(s.zero3_fetch_host_us >= 0 && s.zero3_fetch_host_us < 1e6))
    r.fail("zero3_fetch_host_us", fmt::format("{} must be in [0, 1e6)", s.zero3_fetch_host_us));
  if (s.zero3_gather == Zero3Gather::Block &&
      (s.zero3_persist_params > 0 || s.zero3_gather_bucket_params > 0))
    r.fail("zero3_gather", "zero3_persist_params and zero3_gather_bucket_params need zero3_gather: module");
  if (r.has("supports")) {
    YamlReader u = r.child("supports");
    u.expect_keys({"tensor_parallel", "pipeline_parallel", "sequence_parallel", "selective_recompute", "zero",
                   "zero_with_pp", "context_parallel", "experts", "ep_overlap"});
    s.supports.tensor_parallel = u.get_bool("tensor_parallel", true);
    s.supports.pipeline_parallel = u.get_bool("pipeline_parallel", true);
    s.supports.sequence_parallel = u.get_bool("sequence_parallel", true);
    s.supports.selective_recompute = u.get_bool("selective_recompute", true);
    s.supports.max_zero = static_cast<int>(u.get_int_in("zero", 0, 3, 3));
    s.supports.max_zero_with_pp = static_cast<int>(u.get_int_in("zero_with_pp", 0, 3, 3));
    s.supports.context_parallel = u.get_bool("context_parallel", true);
    s.supports.experts = u.get_bool("experts", true);
    s.supports.ep_overlap = u.get_bool("ep_overlap", false);
  }
  if (r.has("grad_buffer")) {
    YamlReader g = r.child("grad_buffer");
    g.expect_keys({"zero", "nan_check", "scale"});
    s.grad_buffer_zero = g.get_bool("zero", false);
    s.grad_buffer_nan_check = g.get_bool("nan_check", false);
    s.grad_buffer_scale = g.get_bool("scale", false);
  }

  if (r.has("sources")) {
    YamlReader src = r.child("sources");
    src.expect_map();
    for (const auto& kv : src.node()) {
      const std::string key = kv.first.as<std::string>();
      s.sources[key] = source_text(src.child(key));
    }
  }
  if (s.overlap_param_gather && !s.distributed_optimizer)
    o.fail("param_gather", "overlapping the parameter all-gather needs distributed_optimizer: true");
  return s;
}

std::vector<std::string> software_stack_catalog_names() {
  return detail::catalog_names(detail::embedded_stacks());
}

namespace {

detail::CatalogText stack_text(const std::string& name_or_path) {
  return detail::read_catalog_entry(name_or_path, detail::embedded_stacks(), "costmodel/stacks", "stack",
                                    " (see `strata stacks`)");
}

}  // namespace

SoftwareStack load_software_stack(const std::string& name_or_path) {
  const detail::CatalogText t = stack_text(name_or_path);
  return parse_software_stack(t.text, t.source);
}

namespace {

void merge_yaml(YAML::Node base, const YAML::Node& over) {
  for (const auto& kv : over) {
    const std::string key = kv.first.as<std::string>();
    if (kv.second.IsMap() && base[key] && base[key].IsMap()) merge_yaml(base[key], kv.second);
    else base[key] = YAML::Clone(kv.second);
  }
}

}  // namespace

SoftwareStack load_software_stack(const std::string& name_or_path, const YAML::Node& settings,
                                  const std::string& what) {
  if (!settings || settings.IsNull()) return load_software_stack(name_or_path);
  if (!settings.IsMap()) input_error("{}: expected a map of stack keys", what);
  const detail::CatalogText t = stack_text(name_or_path);
  YAML::Node doc = parse_yaml(t.text, t.source);
  merge_yaml(doc, settings);
  return parse_software_stack(YAML::Dump(doc), fmt::format("{} with {}", t.source, what));
}

std::string default_software_stack_name(const DeviceProfile& device) {
  return device.default_stack.empty() ? kNewestGpuStack : device.default_stack;
}

double grad_bucket_params(const SoftwareStack& s, int dp) {
  if (s.grad_bucket_params > 0) return static_cast<double>(s.grad_bucket_params);
  if (s.grad_bucket_params == 0) return 0;  // no buckets: caller reduces everything at once
  // Megatron-Core DistributedDataParallel: bucket_size = max(40M, 1M x dp) parameters.
  return std::max(40'000'000.0, 1'000'000.0 * dp);
}

}  // namespace strata::costmodel
