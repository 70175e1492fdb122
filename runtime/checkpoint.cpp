#include "runtime/checkpoint.h"
#include "common/json_text.h"

#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "runtime/collective_error.h"
#include "runtime/param_spec.h"

namespace strata::runtime {

namespace fs = std::filesystem;

namespace {

constexpr char kShardMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'C', 'K'};
constexpr std::uint32_t kShardVersion = 1;
constexpr std::size_t kShardHeader = 8 + 4 + 4 + 8 + 8 + 8;
constexpr const char* kFormat = "strata-checkpoint";

std::string shard_name(int rank) { return fmt::format("rank_{:05d}.bin", rank); }

template <typename U>
void put(std::string& out, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i)
    out.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff));
}
template <typename U>
U get(const std::string& in, std::size_t off) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[off + i])) << (8 * i);
  return static_cast<U>(v);
}
void put_floats(std::string& out, const std::vector<float>& v) {
  const std::size_t at = out.size();
  out.resize(at + v.size() * sizeof(float));
  if (!v.empty()) std::memcpy(out.data() + at, v.data(), v.size() * sizeof(float));
}
std::vector<float> get_floats(const std::string& in, std::size_t off, std::size_t n) {
  std::vector<float> v(n);
  if (n != 0) std::memcpy(v.data(), in.data() + off, n * sizeof(float));
  return v;
}

// A 64-bit value as four 16-bit floats (exact), so it travels through float collectives.
void encode(std::uint64_t v, float* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<float>((v >> (16 * i)) & 0xffff);
}
std::uint64_t decode(const float* in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint64_t>(in[i]) << (16 * i);
  return v;
}

std::string hex(std::uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace

std::string checkpoint_step_dir(const std::string& dir, std::int64_t step) {
  return (fs::path(dir) / fmt::format("step_{:08d}", step)).string();
}

void write_checkpoint(kernels::Communicator& world, const std::string& dir,
                      const CheckpointIdentity& identity, const CheckpointShard& shard) {
  const std::string step_dir = checkpoint_step_dir(dir, shard.step);
  const fs::path manifest = fs::path(step_dir) / "manifest.json";
  // Rank 0 prepares the folder; an old manifest of the same step goes first, so a crash
  // while the shards are rewritten leaves the step incomplete rather than inconsistent.
  throw_if_any_rank_failed(world, capture_error([&] {
    if (world.rank() != 0) return;
    std::error_code ec;
    fs::create_directories(step_dir, ec);
    if (ec) input_error("--checkpoint-dir {}: cannot create {}: {}", dir, step_dir, ec.message());
    fs::remove(manifest, ec);
  }));

  std::string bytes;
  bytes.reserve(kShardHeader + (shard.params.size() + 2 * shard.exp_avg.size()) * sizeof(float));
  bytes.append(kShardMagic, 8);
  put<std::uint32_t>(bytes, kShardVersion);
  put<std::uint32_t>(bytes, static_cast<std::uint32_t>(world.rank()));
  put<std::int64_t>(bytes, shard.step);
  put<std::uint64_t>(bytes, shard.params.size());
  put<std::uint64_t>(bytes, shard.exp_avg.size());
  put_floats(bytes, shard.params);
  put_floats(bytes, shard.exp_avg);
  put_floats(bytes, shard.exp_avg_sq);
  throw_if_any_rank_failed(world, capture_error([&] {
    write_file_atomic((fs::path(step_dir) / shard_name(world.rank())).string(), bytes);
  }));
  // Every shard is on disk: rank 0 records their sizes and checksums in the manifest.
  float status[8];
  encode(fnv1a64(bytes.data(), bytes.size()), status);
  encode(bytes.size(), status + 4);
  std::vector<float> all(8 * static_cast<std::size_t>(world.size()));
  world.all_gather(status, all.data(), 8);
  throw_if_any_rank_failed(world, capture_error([&] {
    if (world.rank() != 0) return;
    nlohmann::ordered_json m;
    m["format"] = kFormat;
    m["version"] = 1;
    m["step"] = shard.step;
    nlohmann::ordered_json id = nlohmann::ordered_json::object();
    for (const auto& [k, v] : identity) id[k] = v;
    m["identity"] = id;
    m["shards"] = nlohmann::ordered_json::array();
    for (int r = 0; r < world.size(); ++r) {
      const float* s = all.data() + 8 * static_cast<std::size_t>(r);
      m["shards"].push_back({{"rank", r}, {"file", shard_name(r)}, {"bytes", decode(s + 4)},
                             {"fnv1a64", hex(decode(s))}});
    }
    write_file_atomic(manifest.string(), m.dump(2) + "\n");
  }));  // also the barrier: no rank returns before the manifest is written
}

std::optional<std::int64_t> latest_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::optional<std::int64_t> best;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 || name.size() <= 5) continue;
    const std::string digits = name.substr(5);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    if (!fs::exists(entry.path() / "manifest.json", ec)) continue;  // incomplete
    const std::int64_t step = std::stoll(digits);
    if (!best || step > *best) best = step;
  }
  return best;
}

CheckpointShard read_checkpoint(kernels::Communicator& world, const std::string& dir,
                                std::int64_t step, const CheckpointIdentity& identity,
                                std::size_t expected_params, std::size_t expected_state) {
  const std::string step_dir = checkpoint_step_dir(dir, step);
  const std::string manifest_path = (fs::path(step_dir) / "manifest.json").string();
  // The manifest is the same file for every rank: its errors are raised on all ranks alike.
  nlohmann::json m;
  try {
    m = strata::parse_json(read_file(manifest_path));
  } catch (const nlohmann::json::exception& e) {
    input_error("checkpoint manifest {} is not valid JSON: {}", manifest_path, e.what());
  }
  try {
    if (m.at("format").get<std::string>() != kFormat || m.at("version").get<int>() != 1)
      input_error("checkpoint manifest {}: format must be \"{}\" version 1", manifest_path, kFormat);
    if (m.at("step").get<std::int64_t>() != step)
      input_error("checkpoint manifest {}: step {} does not match its folder (step {})",
                  manifest_path, m.at("step").get<std::int64_t>(), step);
    const auto& id = m.at("identity");
    for (const auto& [key, value] : identity) {
      if (!id.contains(key))
        input_error("checkpoint {} has no '{}' (this run: {})", step_dir, key, value);
      const std::string saved = id.at(key).get<std::string>();
      if (saved != value)
        input_error("checkpoint {} does not match this run: {} is '{}' in the checkpoint but '{}' "
                    "now (resume with the same plan, seed and world size)",
                    step_dir, key, saved, value);
    }
    if (m.at("shards").size() != static_cast<std::size_t>(world.size()))
      input_error("checkpoint {} has {} shards but the run has {} ranks", step_dir,
                  m.at("shards").size(), world.size());
  } catch (const nlohmann::json::exception& e) {
    input_error("checkpoint manifest {} is malformed: {}", manifest_path, e.what());
  }

  // This rank's shard: failures are agreed on by all ranks before anyone throws.
  std::string error;
  CheckpointShard shard;
  try {
    const auto& entry = m.at("shards").at(static_cast<std::size_t>(world.rank()));
    const std::string path = (fs::path(step_dir) / entry.at("file").get<std::string>()).string();
    const std::string bytes = read_file(path);
    if (bytes.size() != entry.at("bytes").get<std::uint64_t>() ||
        hex(fnv1a64(bytes.data(), bytes.size())) != entry.at("fnv1a64").get<std::string>())
      input_error("checkpoint shard {} is corrupt: its size or FNV-1a checksum differs from the "
                  "manifest", path);
    if (bytes.size() < kShardHeader || std::memcmp(bytes.data(), kShardMagic, 8) != 0 ||
        get<std::uint32_t>(bytes, 8) != kShardVersion)
      input_error("checkpoint shard {} is not a strata shard (version {})", path, kShardVersion);
    if (get<std::uint32_t>(bytes, 12) != static_cast<std::uint32_t>(world.rank()) ||
        get<std::int64_t>(bytes, 16) != step)
      input_error("checkpoint shard {} belongs to rank {} step {}", path,
                  get<std::uint32_t>(bytes, 12), get<std::int64_t>(bytes, 16));
    const auto np = get<std::uint64_t>(bytes, 24), ns = get<std::uint64_t>(bytes, 32);
    if (np != expected_params || ns != expected_state)
      input_error("checkpoint shard {} holds {} parameters and {} optimizer values; this rank "
                  "needs {} and {}", path, np, ns, expected_params, expected_state);
    if (bytes.size() != kShardHeader + (np + 2 * ns) * sizeof(float))
      input_error("checkpoint shard {} is truncated", path);
    shard.step = step;
    shard.params = get_floats(bytes, kShardHeader, np);
    shard.exp_avg = get_floats(bytes, kShardHeader + np * sizeof(float), ns);
    shard.exp_avg_sq = get_floats(bytes, kShardHeader + (np + ns) * sizeof(float), ns);
  } catch (const InputError& e) {
    error = e.what();
  } catch (const nlohmann::json::exception& e) {
    error = fmt::format("checkpoint manifest {} is malformed: {}", manifest_path, e.what());
  }
  throw_if_any_rank_failed(world, error.empty() ? LocalError{} : LocalError{ErrorKind::Input, error});
  return shard;
}

}  // namespace strata::runtime
