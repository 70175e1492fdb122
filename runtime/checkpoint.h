// Sharded checkpoints: one shard file per rank (its parameters, AdamW moments and the
// step; the data position follows from the step) plus a manifest written last by rank 0:
//
//   D/step_00000003/rank_00000.bin ... rank_<world-1>.bin
//   D/step_00000003/manifest.json   {"format": "strata-checkpoint", "version": 1, "step",
//                                    "identity": {model, layout, seed, ...},
//                                    "shards": [{"rank", "file", "bytes", "fnv1a64"}]}
//
// Every file is written atomically (temp file + rename); a step directory without a
// manifest is incomplete and ignored. Loading checks the identity (model, layout, seed,
// batch, world size) against the run and each shard's size and FNV-1a checksum against
// the manifest; any mismatch is an InputError on every rank, never a silent load.
// Shard layout (little-endian): "STRATACK", uint32 version, uint32 rank, int64 step,
// uint64 params, uint64 state, then params, exp_avg, exp_avg_sq as float32.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"

namespace strata::runtime {

// What must match for a checkpoint to be loadable: (key, value) pairs.
using CheckpointIdentity = std::vector<std::pair<std::string, std::string>>;

struct CheckpointShard {
  std::int64_t step = 0;
  std::vector<float> params;      // the rank's flat parameter buffer
  std::vector<float> exp_avg;     // AdamW moments of the rank's owned range
  std::vector<float> exp_avg_sq;
};

std::string checkpoint_step_dir(const std::string& dir, std::int64_t step);

// Collective over `world` (every rank calls). Throws InputError when the folder cannot
// be created or written.
void write_checkpoint(kernels::Communicator& world, const std::string& dir,
                      const CheckpointIdentity& identity, const CheckpointShard& shard);

// Highest step in `dir` whose manifest exists; nullopt when there is none.
std::optional<std::int64_t> latest_checkpoint(const std::string& dir);

// Collective. Reads this rank's shard of `step`; InputError on every rank when the
// manifest is missing or malformed, the identity differs (message names the key and both
// values), or any rank's shard is missing, truncated, of the wrong size or fails its checksum.
CheckpointShard read_checkpoint(kernels::Communicator& world, const std::string& dir,
                                std::int64_t step, const CheckpointIdentity& identity,
                                std::size_t expected_params, std::size_t expected_state);

}  // namespace strata::runtime
