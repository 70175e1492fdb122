// The checkpoint manifest (D/step_N/manifest.json, see runtime/checkpoint.h) read and
// checked without MPI or files, so that a unit test and a fuzzer reach every branch.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::runtime {

inline constexpr const char* kCheckpointFormat = "strata-checkpoint";

// What must match for a checkpoint to be loadable: (key, value) pairs.
using CheckpointIdentity = std::vector<std::pair<std::string, std::string>>;

struct ManifestShard {
  std::string file;
  std::uint64_t bytes = 0;
  std::string fnv1a64;
};
struct CheckpointManifest {
  std::int64_t step = 0;
  std::string run_id;  // "" in manifests written before run ids
  std::vector<ManifestShard> shards;
};

// The format and version, the step against its folder, the identity against this run
// (the message names the key and both values), the shard count against the world size;
// shard file names must stay inside the step folder and every integer is range-checked.
// InputError naming `source` otherwise.
CheckpointManifest parse_checkpoint_manifest(const std::string& text, const std::string& source,
                                             std::int64_t step, const CheckpointIdentity& identity,
                                             int world_size);

}  // namespace strata::runtime
