#include "kernels/profiler/profile_writer.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/atomic_file.h"

namespace strata::kernels::profiler {

namespace {

// Fixed significant digits keep files diff-friendly and readable.
// `digits` significant digits, plain decimal notation for 1e-4 <= |v| < 1e12.
std::string num(double v, int digits = 6) {
  if (v == 0 || !std::isfinite(v)) return "0";
  double a = std::fabs(v);
  if (a < 1e-4 || a >= 1e12) return fmt::format("{:.{}g}", v, digits);
  int int_digits = static_cast<int>(std::floor(std::log10(a))) + 1;
  int decimals = std::max(0, digits - int_digits);
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

// The run's identity, repeated in each table's source so a table copied elsewhere
// still says where it came from; the full provenance is the top-level source.
bool identity_key(const std::string& k) {
  return k == "tool" || k == "host" || k == "device" || k == "date" || k == "commit";
}

void emit_source(YAML::Emitter& out, const std::vector<std::pair<std::string, std::string>>& base,
                 const std::vector<std::pair<std::string, std::string>>& extra,
                 const std::string& kind = "measured", bool identity_only = false) {
  out << YAML::BeginMap << YAML::Key << "kind" << YAML::Value << kind;
  std::vector<std::pair<std::string, std::string>> merged;
  for (const auto& kv : base)
    if (kv.first != "kind" && (!identity_only || identity_key(kv.first))) merged.push_back(kv);
  for (const auto& kv : extra) {
    if (kv.first == "kind") continue;
    auto it = std::find_if(merged.begin(), merged.end(), [&](auto& m) { return m.first == kv.first; });
    if (it != merged.end()) it->second = kv.second;
    else merged.push_back(kv);
  }
  for (const auto& [k, v] : merged) out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
  out << YAML::EndMap;
}

// A measured table, left out when it has no rows: `key: {source: ..., rows: [...]}`, the
// run's identity with the table's own provenance as its source and one flow map a row,
// whose keys `emit_row` writes.
template <typename Row, typename EmitRow>
void emit_table(YAML::Emitter& out, const char* key, const std::vector<std::pair<std::string, std::string>>& base,
                const std::vector<std::pair<std::string, std::string>>& table_provenance,
                const std::vector<const Row*>& rows, EmitRow&& emit_row) {
  if (rows.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "source" << YAML::Value;
  emit_source(out, base, table_provenance, "measured", true);
  out << YAML::Key << "rows" << YAML::Value << YAML::BeginSeq;
  for (const Row* r : rows) {
    out << YAML::Flow << YAML::BeginMap;
    emit_row(*r);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
}

}  // namespace

double median_gemm_efficiency(const std::vector<GemmRecord>& gemms, GemmDType dtype, double min_flop,
                              const std::string& origin_filter) {
  std::vector<double> big, all;
  for (const auto& g : gemms) {
    if (!g.ok() || g.dtype != dtype || g.efficiency <= 0) continue;
    if (!origin_filter.empty() && g.origin.find(origin_filter) == std::string::npos) continue;
    all.push_back(g.efficiency);
    if (2.0 * static_cast<double>(g.m) * g.n * g.k >= min_flop) big.push_back(g.efficiency);
  }
  auto& v = big.empty() ? all : big;
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

std::string profile_to_yaml(const ProfileInfo& info, const std::vector<GemmRecord>& gemms,
                            const std::vector<CollectiveRecord>& collectives) {
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << info.name;
  out << YAML::Key << "source" << YAML::Value;
  emit_source(out, info.provenance, {});
  if (!info.compute_dtype.empty())
    out << YAML::Key << "compute_dtype" << YAML::Value << info.compute_dtype;
  out << YAML::Key << "memory_gib" << YAML::Value << num(info.memory_gib, 4);
  out << YAML::Key << "memory_bandwidth_gbps" << YAML::Value << num(info.memory_bandwidth_gbps, 4);
  out << YAML::Key << "peak_tflops" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& [d, v] : info.peak_tflops) out << YAML::Key << to_string(d) << YAML::Value << num(v, 5);
  out << YAML::EndMap;
  out << YAML::Key << "efficiency" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gemm" << YAML::Value << num(info.gemm_efficiency, 3);
  out << YAML::Key << "attention" << YAML::Value << num(info.attention_efficiency, 3);
  out << YAML::Key << "memory" << YAML::Value << num(info.memory_efficiency, 3);
  if (!info.efficiency_provenance.empty()) {
    out << YAML::Key << "source" << YAML::Value;
    emit_source(out, {}, info.efficiency_provenance);
  }
  out << YAML::EndMap;
  out << YAML::Key << "reserve_gib" << YAML::Value << num(info.reserve_gib, 4);
  if (!info.reserve_provenance.empty()) {
    std::string kind = "estimate";
    std::vector<std::pair<std::string, std::string>> rest;
    for (const auto& kv : info.reserve_provenance) {
      if (kv.first == "kind") kind = kv.second;
      else rest.push_back(kv);
    }
    out << YAML::Key << "reserve_source" << YAML::Value << YAML::Flow;
    emit_source(out, {}, rest, kind);
  }

  std::vector<const GemmRecord*> grows;
  // Rows faster than 1.1x the stated peak are timing artefacts; the cost model's reader
  // refuses them (costmodel/device_profile.cpp), so they are not written.
  for (const auto& g : gemms)
    if (g.ok() && !(g.efficiency > 1.1)) grows.push_back(&g);
  emit_table(out, "gemm_table", info.provenance, info.gemm_provenance, grows, [&](const GemmRecord& g) {
    out << YAML::Key << "m" << YAML::Value << g.m;
    out << YAML::Key << "n" << YAML::Value << g.n;
    out << YAML::Key << "k" << YAML::Value << g.k;
    out << YAML::Key << "dtype" << YAML::Value << to_string(g.dtype);
    out << YAML::Key << "time_us" << YAML::Value << num(g.time.median_us);
  });

  std::vector<const CollectiveRecord*> crows;
  for (const auto& c : collectives)
    if (c.ok()) crows.push_back(&c);
  emit_table(out, "collective_table", info.provenance, info.collective_provenance, crows,
             [&](const CollectiveRecord& c) {
               out << YAML::Key << "collective" << YAML::Value << to_string(c.collective);
               out << YAML::Key << "ranks" << YAML::Value << c.ranks;
               out << YAML::Key << "bytes" << YAML::Value << c.bytes;
               out << YAML::Key << "time_us" << YAML::Value << num(c.time.median_us);
               out << YAML::Key << "busbw_gbps" << YAML::Value << num(c.busbw_gbps);
               if (c.trivial) out << YAML::Key << "trivial" << YAML::Value << true;
             });
  out << YAML::EndMap;
  std::string text;
  for (const auto& line : info.comments) text += line.empty() ? "#\n" : "# " + line + "\n";
  text += out.c_str();
  text += "\n";
  return text;
}

void write_profile(const std::string& path, const ProfileInfo& info,
                   const std::vector<GemmRecord>& gemms,
                   const std::vector<CollectiveRecord>& collectives) {
  write_file_atomic(path, profile_to_yaml(info, gemms, collectives));
}

}  // namespace strata::kernels::profiler
