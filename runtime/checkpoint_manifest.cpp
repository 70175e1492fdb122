#include "runtime/checkpoint_manifest.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "common/json_text.h"

namespace strata::runtime {

namespace fs = std::filesystem;

CheckpointManifest parse_checkpoint_manifest(const std::string& text, const std::string& source,
                                             std::int64_t step, const CheckpointIdentity& identity,
                                             int world_size) {
  nlohmann::json m;
  try {
    m = strata::parse_json(text);
  } catch (const nlohmann::json::exception& e) {
    input_error("checkpoint manifest {} is not valid JSON: {}", source, e.what());
  }
  const std::string step_dir = fs::path(source).parent_path().string();
  CheckpointManifest out;
  try {
    if (!m.is_object()) input_error("checkpoint manifest {}: expected a JSON object", source);
    if (m.at("format").get<std::string>() != kCheckpointFormat || json_int<int>(m.at("version"), source + ": version") != 1)
      input_error("checkpoint manifest {}: format must be \"{}\" version 1", source, kCheckpointFormat);
    out.step = json_int<std::int64_t>(m.at("step"), source + ": step");
    if (out.step != step)
      input_error("checkpoint manifest {}: step {} does not match its folder (step {})", source,
                  out.step, step);
    const auto& id = m.at("identity");
    if (!id.is_object()) input_error("checkpoint manifest {}: identity must be an object", source);
    for (const auto& [key, value] : identity) {
      if (!id.contains(key))
        input_error("checkpoint {} has no '{}' (this run: {})", step_dir, key, value);
      const std::string saved = id.at(key).get<std::string>();
      if (saved != value)
        input_error("checkpoint {} does not match this run: {} is '{}' in the checkpoint but '{}' "
                    "now (resume with the same plan, seed and world size)",
                    step_dir, key, saved, value);
    }
    if (m.contains("run_id")) out.run_id = m.at("run_id").get<std::string>();
    const auto& shards = m.at("shards");
    if (!shards.is_array()) input_error("checkpoint manifest {}: shards must be a list", source);
    if (shards.size() != static_cast<std::size_t>(world_size))
      input_error("checkpoint {} has {} shards but the run has {} ranks", step_dir, shards.size(),
                  world_size);
    for (std::size_t r = 0; r < shards.size(); ++r) {
      const auto& e = shards[r];
      const std::string where = fmt::format("{}: shards[{}]", source, r);
      ManifestShard sh;
      sh.file = e.at("file").get<std::string>();
      // A shard file sits in the step folder: no path separators, no "." / "..".
      if (sh.file.empty() || sh.file.find('/') != std::string::npos || sh.file == "." || sh.file == "..")
        input_error("{}: file '{}' must be a file name inside the step folder", where, sh.file);
      sh.bytes = json_int<std::uint64_t>(e.at("bytes"), where + ".bytes");
      sh.fnv1a64 = e.at("fnv1a64").get<std::string>();
      out.shards.push_back(std::move(sh));
    }
  } catch (const nlohmann::json::exception& e) {
    input_error("checkpoint manifest {} is malformed: {}", source, e.what());
  }
  return out;
}

}  // namespace strata::runtime
