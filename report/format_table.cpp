#include "report/format_table.h"

#include "report/report_data.h"
#include "report/report_notes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/one_line.h"
#include "planner/memory_headroom.h"
#include "planner/strategy.h"

namespace strata::report {

Table::Table(std::vector<std::pair<std::string, Align>> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
  STRATA_CHECK(cells.size() == columns_.size(), "table row has {} cells for {} columns",
               cells.size(), columns_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    width[c] = columns_[c].first.size();
    for (const auto& r : rows_) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) out += "  ";
      if (columns_[c].second == Align::Right)
        out += fmt::format("{:>{}}", cells[c], width[c]);
      else if (c + 1 == cells.size())
        out += cells[c];  // no trailing blanks
      else
        out += fmt::format("{:<{}}", cells[c], width[c]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> header;
  std::vector<std::string> rule;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    header.push_back(columns_[c].first);
    rule.push_back(std::string(width[c], '-'));
  }
  std::string out = line(header) + line(rule);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string duration_cell(double s) {
  if (!std::isfinite(s)) return "n/a";
  if (s == 0) return "0 s";
  if (s >= 1.0) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.1f} ms", s * 1e3);
  return fmt::format("{:.0f} us", s * 1e6);
}

std::string range_cell(double low_s, double high_s) {
  if (!std::isfinite(low_s) || !std::isfinite(high_s)) return "n/a";
  if (high_s >= 1.0) return fmt::format("{:.3f}-{:.3f} s", low_s, high_s);
  if (high_s >= 1e-3) return fmt::format("{:.1f}-{:.1f} ms", low_s * 1e3, high_s * 1e3);
  return fmt::format("{:.0f}-{:.0f} us", low_s * 1e6, high_s * 1e6);
}

std::string likely_range_cell(const planner::Prediction& q) {
  if (q.uncertainty < 0) return "-";
  return range_cell(q.iteration_s * q.uncertainty_low, q.iteration_s * q.uncertainty_high);
}

std::string percent_cell(double f) {
  if (!std::isfinite(f)) return "n/a";
  return fmt::format("{:.1f}%", f * 100.0);
}

namespace {

std::string strategy_brief(const planner::Strategy& s) {
  std::string out = fmt::format("tp={} pp={} dp={}", s.tp, s.pp, s.dp);
  if (s.cp > 1) out += fmt::format(" cp={}", s.cp);
  if (s.ep * s.etp > 1) out += fmt::format(" ep={} etp={}", s.ep, s.etp);
  if (s.vpp > 1) out += fmt::format(" vpp={}", s.vpp);
  out += fmt::format(" mbs={} zero={} recompute={}", s.micro_batch, s.zero,
                     planner::to_string(s.recompute));
  if (s.recompute_modules.any())
    out += fmt::format("({})", fmt::join(costmodel::recompute_module_names(s.recompute_modules), ","));
  if (s.recompute == planner::Recompute::Full && s.recompute_layers > 0)
    out += fmt::format("(first {} blocks of each chunk)", s.recompute_layers);
  if (s.sequence_parallel) out += " sp";
  out += fmt::format(" {}", planner::to_string(s.schedule));
  if (s.ep_overlap) out += " ep-overlap";
  if (s.delay_wgrad) out += " delay-wgrad";
  return out;
}

// A plan that fits with under the default headroom's share of the device's memory left is
// marked "tight": the caching allocator's fragmentation (a few GiB on an 80 GB part in long
// jobs, an estimate) can push it over. The default --memory-headroom keeps only plans with room,
// so tight plans are those of a lower headroom, or of simulate and compare.
constexpr double kTightMemoryShare = 1 - planner::kDefaultHeadroomShare;

bool memory_is_tight(double used_gib, double capacity_gib) {
  return capacity_gib > 0 && used_gib > kTightMemoryShare * capacity_gib && used_gib <= capacity_gib;
}

std::string memory_cell(double used_gib, double capacity_gib) {
  return fmt::format("{:.1f}/{:g}{}", used_gib, capacity_gib, memory_is_tight(used_gib, capacity_gib) ? " tight" : "");
}

std::string tight_legend(bool any) {
  const double spare_percent = 100 * (1 - kTightMemoryShare);
  return any ? fmt::format("# tight: fits with under {0:.0f}% of the GPU's memory to spare; allocator fragmentation "
                           "can push it over (plan's default --memory-headroom {0:.0f}% keeps only plans with room)\n",
                           spare_percent)
             : "";
}

// TFLOP/s with one decimal for GPUs, three significant digits below 1 (CPU ranks).
std::string tflops_cell(double tf) {
  return tf >= 1 || tf == 0 ? fmt::format("{:.1f}", tf) : fmt::format("{:.3g}", tf);
}

struct Part {
  const char* name;
  double value;
};

std::vector<Part> parts(const planner::Breakdown& b) {
  return {{"compute", b.compute},       {"tp comm", b.tp_comm},     {"cp comm", b.cp_comm},
          {"pp comm", b.pp_comm},       {"dp comm", b.dp_comm},     {"optimizer", b.optimizer},
          {"bubble", b.bubble},         {"ep comm (all-to-all)", b.ep_comm},
          {"stragglers (step jitter)", b.straggler}, {"host wait (MoE sync)", b.host_wait}};
}

std::string header_lines(const PlanReport& r) {
  std::string out;
  out += fmt::format("# strata {}: model {} on cluster {} ({}), {} GPUs, global batch {}", r.command,
                     one_line(r.model), one_line(r.cluster), one_line(r.device), r.gpus,
                     r.global_batch);
  if (!r.plans.empty()) out += fmt::format(" x seq {}", r.plans.front().model.seq_len);
  if (!r.plans.empty() && !r.plans.front().prediction.precision.empty())
    out += fmt::format(", precision {}", r.plans.front().prediction.precision);
  out += "\n";
  if (!r.defaults.empty()) {
    out += "# defaults used: ";
    for (std::size_t i = 0; i < r.defaults.size(); ++i) out += (i ? ", " : "") + r.defaults[i];
    out += " (override with --model/--cluster/--gpus/--global-batch)\n";
  }
  if (r.searched) {
    out += fmt::format(
        "# searched {} candidates in {:.3f} s: {} fit memory, {} over memory, {} rejected by "
        "constraints\n",
        r.candidates_evaluated, r.search_s,
        std::max<std::int64_t>(0, r.candidates_evaluated - r.infeasible_memory),
        r.infeasible_memory, r.invalid);
  }
  out += fmt::format("# memory per GPU: {:g} GiB ({:g} GiB reserved for workspace{})\n", r.memory_capacity_gib,
                     r.reserve_gib,
                     r.headroom_gib > 0 ? fmt::format(", {:g} GiB kept free by --memory-headroom", r.headroom_gib) : "");
  // Without --explain the header keeps to what a reader must see before trusting the table:
  // the first note (the stack the numbers rest on), every warning, and any number that is
  // only a datasheet's; the rest (kernel sources, memory rules) is one --explain away.
  // The count of the notes held back rides on the first line: one note line by default.
  std::vector<std::string> lines;
  std::size_t held_back = 0;
  for (std::size_t i = 0; i < r.notes.size(); ++i) {
    const std::string& n = r.notes[i];
    const std::string brief = short_note(n);  // the sources in parentheses are not the caveat
    const bool must_see = i == 0 || n.rfind("warning:", 0) == 0 || brief.find("datasheet") != std::string::npos;
    if (r.explain || must_see)
      lines.push_back(one_line(r.explain ? n : brief));
    else
      ++held_back;
  }
  if (held_back > 0)
    lines.front() += fmt::format(" ({} more note{}: kernel sources, collectives, memory rules; --explain prints them)",
                                 held_back, held_back == 1 ? "" : "s");
  for (const auto& l : lines) out += "# note: " + l + "\n";
  return out;
}

}  // namespace

std::string explain_memory(const planner::Plan* plan, const std::string& which) {
  if (!plan) return "";
  const auto& q = plan->prediction;
  const auto& m = q.peak_memory;
  const auto& s = plan->strategy;
  std::string out = fmt::format(
      "# memory per GPU {}(pipeline stage {}): weights {:.1f} + gradients {:.1f} + optimizer "
      "{:.1f} GiB ({}) + activations {:.1f} GiB ({} micro-batch chunk(s) in "
      "flight, {} tokens each{}) + logits {:.1f}{} + reserve {:.1f} = {:.1f} GiB\n",
      which.empty() ? "" : "of " + which + " ", m.stage, m.weights, m.grads, m.optimizer,
      s.zero == 0 ? fmt::format("no ZeRO: whole on each of dp x cp = {}", s.dp * s.cp)
                  : fmt::format("zero {} over dp x cp = {}", s.zero, s.dp * s.cp),
      m.activations, m.in_flight,
      static_cast<long long>(s.micro_batch * plan->model.seq_len / s.cp),
      s.cp > 1 ? fmt::format(" = {} x seq {} / cp {}", s.micro_batch, plan->model.seq_len, s.cp) : "",
      m.logits, m.step_extra > 0 ? fmt::format(" + optimizer step's fp32 gradient copy beyond them {:.1f}", m.step_extra) : "",
      m.reserve, q.peak_memory_gib);
  // Mixture of experts / multi-token prediction: the parts of the sums above they hold.
  std::vector<std::string> held;
  if (plan->model.moe)
    held.push_back(fmt::format("routed experts: weights {:.1f} + gradients and optimizer {:.1f} GiB ({} = {}); "
                               "routed-token activations {:.1f} GiB",
                               m.expert_weights, m.expert_grads_optimizer,
                               s.zero == 0 ? "no ZeRO, edp" : "ZeRO over edp", s.edp(), m.dispatch_activations));
  if (plan->model.mtp_layers > 0 && m.mtp > 0)
    held.push_back(fmt::format("multi-token prediction ({} depth(s)) activations and logits {:.1f} GiB",
                               plan->model.mtp_layers, m.mtp));
  if (!held.empty()) out += fmt::format("#   of which {}\n", fmt::join(held, "; "));
  if (m.recompute_layer > 0)
    out += fmt::format("#   full recompute: the activations include the one layer the backward re-runs ({:.1f} GiB), "
                       "beyond the loss's peak, which is freed first\n",
                       m.recompute_layer);
  // The copy lives only through the optimizer step, in the memory the activations freed.
  if (m.step_grad_copy > 0)
    out += fmt::format("#   the optimizer step's fp32 gradient copy ({:.1f} GiB) is held only while the activations "
                       "and logits are freed, so the peak holds the larger of the two\n",
                       m.step_grad_copy);
  return out;
}

std::string explain_best(const PlanReport& r) {
  if (r.plans.empty()) return "";
  const auto& best = r.plans.front().prediction;
  const double t = best.iteration_s;
  std::string out = fmt::format("# why #1: {} per step =", duration_cell(t));
  bool first = true;
  for (const auto& p : parts(best.breakdown_s)) {
    if (p.value <= 0) continue;
    out += fmt::format("{} {} {} ({})", first ? "" : " +", p.name, duration_cell(p.value),
                       t > 0 ? percent_cell(p.value / t) : "n/a");
    first = false;
  }
  if (first) out += " (no breakdown)";
  if (r.plans.size() > 1) {
    const auto& second = r.plans[1].prediction;
    // The component where #1 saves the most time against #2.
    auto a = parts(best.breakdown_s);
    auto b = parts(second.breakdown_s);
    std::size_t arg = 0;
    double gain = -1;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (b[i].value - a[i].value > gain) {
        gain = b[i].value - a[i].value;
        arg = i;
      }
    double faster = second.iteration_s > 0 ? 1.0 - t / second.iteration_s : 0.0;
    if (faster < 5e-4) {
      out +=
          fmt::format("; tied with #2 ({}) to within 0.05%", strategy_brief(r.plans[1].strategy));
      return out + "\n";
    }
    out += fmt::format("; {} faster than #2 ({})", percent_cell(faster),
                       strategy_brief(r.plans[1].strategy));
    if (gain > 0)
      out += fmt::format(", mostly {} ({} vs {})", a[arg].name, duration_cell(a[arg].value),
                         duration_cell(b[arg].value));
  }
  return out + "\n";
}

std::string format_plan_table(const PlanReport& r) {
  // Expert columns only when some plan uses expert parallelism (MoE models).
  bool experts = false;
  bool banded = false;  // some plan has an uncertainty band: the likely range beside the step
  for (const auto& p : r.plans) {
    experts = experts || p.strategy.ep * p.strategy.etp > 1;
    banded = banded || p.prediction.uncertainty >= 0;
  }
  std::vector<std::pair<std::string, Align>> cols{{"rank", Align::Right},
           {"tp", Align::Right},
           {"pp", Align::Right},
           {"dp", Align::Right},
           {"cp", Align::Right}};
  if (experts) cols.insert(cols.end(), {{"ep", Align::Right}, {"etp", Align::Right}});
  cols.insert(cols.end(), {
           {"vpp", Align::Right},
           {"mbs", Align::Right},
           {"zero", Align::Right},
           {"recompute", Align::Left},
           {"sp", Align::Left},
           {"sched", Align::Left},
           {"step time", Align::Right}});
  if (banded) cols.emplace_back("likely range", Align::Right);
  cols.insert(cols.end(), {
           {"TFLOP/s/GPU", Align::Right},
           {"MFU", Align::Right},
           {"mem/GPU GiB", Align::Right},
           {"bubble", Align::Right}});
  if (experts) cols.emplace_back("a2a", Align::Right);
  const bool ttt = r.target.given();
  if (ttt) {
    cols.emplace_back("days", Align::Right);
    cols.emplace_back("GPU-hours", Align::Right);
    if (r.target.gpu_hour_price > 0) cols.emplace_back("cost", Align::Right);
  }
  Table t(cols);
  int rank = 1;
  for (const auto& p : r.plans) {
    const auto& s = p.strategy;
    const auto& q = p.prediction;
    std::vector<std::string> row{std::to_string(rank++), std::to_string(s.tp), std::to_string(s.pp),
                                 std::to_string(s.dp), std::to_string(s.cp)};
    if (experts) row.insert(row.end(), {std::to_string(s.ep), std::to_string(s.etp)});
    row.insert(row.end(), {std::to_string(s.vpp), std::to_string(s.micro_batch),
               std::to_string(s.zero), recompute_label(s),
               s.sequence_parallel ? "on" : "off", planner::to_string(s.schedule),
               duration_cell(q.iteration_s)});
    if (banded) row.push_back(likely_range_cell(q));
    row.insert(row.end(), {tflops_cell(q.model_tflops_per_gpu),
               percent_cell(q.mfu), memory_cell(q.peak_memory_gib, r.memory_capacity_gib),
               percent_cell(q.bubble_fraction)});
    if (experts)  // the all-to-all share of the step
      row.push_back(q.iteration_s > 0 ? percent_cell(q.breakdown_s.ep_comm / q.iteration_s) : "n/a");
    if (ttt) {
      const TimeToTrain tt = time_to_train(s, q, p.model.seq_len, r.target);
      row.push_back(format_ranged_days(tt.days, tt.banded));
      row.push_back(format_gpu_hours(tt.gpu_hours.value));
      if (r.target.gpu_hour_price > 0) row.push_back(format_usd(tt.cost_usd.value));
    }
    t.add_row(std::move(row));
  }
  const bool any_tight = std::any_of(r.plans.begin(), r.plans.end(), [&](const planner::Plan& p) {
    return memory_is_tight(p.prediction.peak_memory_gib, r.memory_capacity_gib);
  });
  std::string out = header_lines(r) + t.render() + tight_legend(any_tight) + explain_best(r) +
                    explain_memory(r.plans.empty() ? nullptr : &r.plans.front(), "#1");
  if (ttt && !r.plans.empty()) {
    const auto& best = r.plans.front();
    out += "# time to train #1: " +
           describe_time_to_train(
               time_to_train(best.strategy, best.prediction, best.model.seq_len, r.target)) +
           "\n";
  }
  return out;
}

std::string format_op_costs(const std::vector<planner::OpCostRow>& ops) {
  std::string out =
      "# per op, one micro-batch on one rank (compute only: TP collectives, overlaps and the pipeline "
      "are in the breakdown above); TFLOP/s = model FLOPs / time (flash attention: causal half)\n";
  Table t({{"op", Align::Left}, {"fwd", Align::Right}, {"bwd", Align::Right}, {"TFLOP/s", Align::Right},
           {"GB/s fwd", Align::Right}, {"source", Align::Left}});
  auto flush_group = [&](double fwd, double bwd, double flops) {
    t.add_row({"  total", duration_cell(fwd), duration_cell(bwd),
               flops > 0 ? fmt::format("{:.1f}", flops / (fwd + bwd) / 1e12) : "", "", ""});
  };
  int group = -1;
  double gf = 0, gb = 0, gflops = 0;
  for (const auto& o : ops) {
    if (o.group != group) {
      if (group >= 0) flush_group(gf, gb, gflops);
      group = o.group, gf = gb = gflops = 0;
    }
    gf += o.fwd_s, gb += o.bwd_s, gflops += o.flops;
    const double s = o.fwd_s + o.bwd_s;
    t.add_row({o.name + " (" + o.kind + ")", duration_cell(o.fwd_s), duration_cell(o.bwd_s),
               o.flops > 0 && s > 0 ? fmt::format("{:.1f}", o.flops / s / 1e12) : "",
               o.bytes_fwd > 0 && o.fwd_s > 0 ? fmt::format("{:.0f}", o.bytes_fwd / o.fwd_s / 1e9) : "",
               o.source});
  }
  if (group >= 0) flush_group(gf, gb, gflops);
  return out + t.render();
}

std::string format_simulation_table(const PlanReport& r) {
  STRATA_CHECK(r.plans.size() == 1, "simulate report holds {} plans", r.plans.size());
  const auto& p = r.plans.front();
  const auto& q = p.prediction;
  const auto& s = p.strategy;
  std::string out = header_lines(r);
  out += fmt::format("# strategy: {} (micro-batches per step: {})\n", strategy_brief(s),
                     s.num_microbatches());
  Table t({{"metric", Align::Left}, {"value", Align::Right}, {"share", Align::Right}});
  t.add_row({"step time", duration_cell(q.iteration_s), ""});
  if (q.uncertainty >= 0)
    t.add_row({"likely range", fmt::format("{} - {}", duration_cell(q.iteration_s * q.uncertainty_low),
                                           duration_cell(q.iteration_s * q.uncertainty_high)),
               ""});
  t.add_row({"tokens/s", fmt::format("{:.0f}", q.tokens_per_s), ""});
  t.add_row({"model TFLOP/s/GPU", tflops_cell(q.model_tflops_per_gpu), ""});
  t.add_row({"hardware TFLOP/s/GPU", tflops_cell(q.hardware_tflops_per_gpu), ""});
  t.add_row({"MFU", percent_cell(q.mfu), ""});
  t.add_row({"peak mem/GPU GiB", memory_cell(q.peak_memory_gib, r.memory_capacity_gib),
             q.fits_memory ? "fits" : "OVER"});
  for (std::size_t i = 0; i < q.stage_memory_gib.size(); ++i)
    t.add_row({fmt::format("  stage {} mem GiB", i),
               memory_cell(q.stage_memory_gib[i], r.memory_capacity_gib), ""});
  t.add_row({"bubble", percent_cell(q.bubble_fraction), ""});
  for (const auto& part : parts(q.breakdown_s))
    if ((part.name != std::string("cp comm") || s.cp > 1) &&
        (part.value > 0 || std::string(part.name) != "ep comm (all-to-all)"))
      t.add_row({fmt::format("  {}", part.name), duration_cell(part.value),
               q.iteration_s > 0 ? percent_cell(part.value / q.iteration_s) : "n/a"});
  if (r.target.given()) {
    const TimeToTrain tt = time_to_train(s, q, p.model.seq_len, r.target);
    const auto range = [&](const Ranged& v, std::string (*one)(double)) {
      return tt.banded ? fmt::format("{} ({} - {})", one(v.value), one(v.low), one(v.high))
                       : one(v.value);
    };
    t.add_row({fmt::format("train steps ({} tokens)", format_token_count(tt.tokens)),
               std::to_string(tt.steps), ""});
    t.add_row({"time to train", format_ranged_days(tt.days, tt.banded), ""});
    t.add_row({"GPU-hours", range(tt.gpu_hours, &format_gpu_hours), ""});
    if (tt.gpu_hour_price > 0) t.add_row({"cost", range(tt.cost_usd, &format_usd), ""});
  }
  out += t.render();
  out += explain_memory(&p);
  if (r.target.given())
    out += "# time to train: " +
           describe_time_to_train(time_to_train(s, q, p.model.seq_len, r.target)) + "\n";
  if (!q.fits_memory)
    out += fmt::format("# does NOT fit: {:.1f} GiB per GPU needed, {:.0f} GiB available\n",
                       q.peak_memory_gib, r.memory_capacity_gib);
  return out;
}

std::string format_models_table(const std::vector<ModelRow>& rows) {
  Table t({{"name", Align::Left},
           {"layers", Align::Right},
           {"hidden", Align::Right},
           {"heads", Align::Right},
           {"kv_heads", Align::Right},
           {"ffn", Align::Right},
           {"vocab", Align::Right},
           {"seq", Align::Right},
           {"params(B)", Align::Right},
           {"active(B)", Align::Right},
           {"arch", Align::Left}});
  for (const auto& r : rows) {
    const auto& m = r.spec;
    t.add_row({m.name, std::to_string(m.layers), std::to_string(m.hidden), std::to_string(m.heads),
               std::to_string(m.kv_heads), std::to_string(m.ffn), std::to_string(m.vocab),
               std::to_string(m.seq_len),
               r.params >= 1e9 ? fmt::format("{:.1f}", r.params / 1e9)
                               : fmt::format("{:.4g}", r.params / 1e9),
               r.params_active >= 1e9 ? fmt::format("{:.1f}", r.params_active / 1e9)
                                      : fmt::format("{:.4g}", r.params_active / 1e9),
               fmt::format("{}/{}{}{}", models::to_string(m.activation), models::to_string(m.norm),
                           m.mla ? "/mla" : "",
                           m.moe ? fmt::format("/moe {}x{}{}", m.moe->top_k, m.moe->experts,
                                               m.moe->layer_step > 1
                                                   ? fmt::format(" every {}", m.moe->layer_step)
                                                   : std::string())
                                 : "")});
  }
  return t.render();
}

std::string format_clusters_table(const std::vector<costmodel::ClusterSpec>& clusters) {
  Table t({{"name", Align::Left},
           {"device", Align::Left},
           {"gpus/node", Align::Right},
           {"nodes", Align::Right},
           {"intra GB/s", Align::Right},
           {"inter GB/s", Align::Right},
           {"mem GiB", Align::Right},
           {"peak TF", Align::Right},
           {"source", Align::Left}});
  for (const auto& c : clusters) {
    double peak = 0;
    std::string dtype = "";
    for (const auto& [d, tf] : c.device.peak_tflops)
      if (tf > peak) {
        peak = tf;
        dtype = costmodel::to_string(d);
      }
    std::string source = c.device.source.kind.empty() ? "?" : c.device.source.kind;
    if (!c.device.gemm_table.empty() || !c.device.collective_table.empty())
      source += "+measured tables";
    t.add_row({c.name, c.device.name, std::to_string(c.gpus_per_node), std::to_string(c.nodes),
               fmt::format("{:g}", c.intra_node.bandwidth_gbps),
               fmt::format("{:g}", c.inter_node.bandwidth_gbps),
               fmt::format("{:g}", c.device.memory_gib),
               dtype.empty() ? "-" : fmt::format("{:g} {}", peak, dtype), source});
  }
  return t.render();
}

}  // namespace strata::report
