#include "runtime/checkpoint.h"

#include "common/json_text.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
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
    m["format"] = kCheckpointFormat;
    m["version"] = 1;
    m["step"] = shard.step;
    nlohmann::ordered_json id = nlohmann::ordered_json::object();
    for (const auto& [k, v] : identity) id[k] = v;
    m["identity"] = id;
    if (!shard.run_id.empty()) m["run_id"] = shard.run_id;
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
    // A step count beyond 64 bits is no checkpoint this runtime wrote: refuse it by name
    // (std::stoll would throw out_of_range as an internal error).
    std::int64_t step = 0;
    const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (err != std::errc{} || end != digits.data() + digits.size())
      input_error("--checkpoint-dir {}: folder {} has a step number beyond {} (not a strata checkpoint); "
                  "move it away or choose another directory",
                  dir, name, std::numeric_limits<std::int64_t>::max());
    if (!best || step > *best) best = step;
  }
  return best;
}

CheckpointDirLock::CheckpointDirLock(const std::string& dir) : path_((fs::path(dir) / kLockFile).string()) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0)
    input_error("--checkpoint-dir {}: cannot open the lock file {}: {}", dir, path_, std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    std::string holder;
    char buf[64] = {};
    if (::pread(fd_, buf, sizeof buf - 1, 0) > 0) holder = buf;
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (e == EWOULDBLOCK)
      input_error("--checkpoint-dir {} is in use by another `strata train` job{} (it holds the lock "
                  "{}): wait for it to end or pick another folder",
                  dir, holder.empty() ? "" : fmt::format(" ({})", holder), path_);
    input_error("--checkpoint-dir {}: cannot lock {}: {}", dir, path_, std::strerror(e));
  }
  // Who holds it, for the message another job prints.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string who = fmt::format("pid {} on {}\n", ::getpid(), host);
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] ssize_t n = ::pwrite(fd_, who.data(), who.size(), 0);
  }
}

CheckpointDirLock::~CheckpointDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

std::unique_ptr<CheckpointDirLock> claim_checkpoint_dir(const std::string& dir, bool resume) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    input_error("--checkpoint-dir {}: cannot create the folder{}{}", dir, ec ? ": " : "",
                ec ? ec.message() : "");
  auto lock = std::make_unique<CheckpointDirLock>(dir);
  if (!resume) {
    if (const auto latest = latest_checkpoint(dir)) {
      std::string run;
      try {
        const auto j = strata::parse_json(
            read_file((fs::path(checkpoint_step_dir(dir, *latest)) / "manifest.json").string()));
        if (j.is_object() && j.contains("run_id") && j["run_id"].is_string())
          run = fmt::format(", run {}", j["run_id"].get<std::string>());
      } catch (const std::exception&) {
      }
      input_error("--checkpoint-dir {} holds the checkpoints of another run (latest step {}{}); a "
                  "new run would overwrite and mix them: pick another folder, or pass --resume to "
                  "continue that run",
                  dir, *latest, run);
    }
  }
  return lock;
}

std::string new_run_id() {
  std::random_device rd;
  const std::uint64_t a = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  return fmt::format("{:016x}{:08x}", a ^ static_cast<std::uint64_t>(now),
                     static_cast<std::uint32_t>(::getpid()));
}

CheckpointShard read_checkpoint(kernels::Communicator& world, const std::string& dir,
                                std::int64_t step, const CheckpointIdentity& identity,
                                std::size_t expected_params, std::size_t expected_state) {
  const std::string step_dir = checkpoint_step_dir(dir, step);
  const std::string manifest_path = (fs::path(step_dir) / "manifest.json").string();
  // The manifest is the same file for every rank: its errors are raised on all ranks alike.
  const CheckpointManifest m =
      parse_checkpoint_manifest(read_file(manifest_path), manifest_path, step, identity, world.size());

  // This rank's shard: failures are agreed on by all ranks before anyone throws.
  std::string error;
  CheckpointShard shard;
  try {
    const ManifestShard& entry = m.shards.at(static_cast<std::size_t>(world.rank()));
    const std::string path = (fs::path(step_dir) / entry.file).string();
    const std::string bytes = read_file(path, SIZE_MAX);  // shards are as large as the model
    if (bytes.size() != entry.bytes || hex(fnv1a64(bytes.data(), bytes.size())) != entry.fnv1a64)
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
    shard.run_id = m.run_id;
    shard.params = get_floats(bytes, kShardHeader, np);
    shard.exp_avg = get_floats(bytes, kShardHeader + np * sizeof(float), ns);
    shard.exp_avg_sq = get_floats(bytes, kShardHeader + (np + ns) * sizeof(float), ns);
  } catch (const InputError& e) {
    error = e.what();
  }
  throw_if_any_rank_failed(world, error.empty() ? LocalError{} : LocalError{ErrorKind::Input, error});
  return shard;
}

}  // namespace strata::runtime
