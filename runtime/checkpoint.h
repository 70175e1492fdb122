// Sharded checkpoints: one shard file per rank (its parameters, AdamW moments and the
// step; the data position follows from the step) plus a manifest written last by rank 0:
//
//   D/step_00000003/rank_00000.bin ... rank_<world-1>.bin
//   D/step_00000003/manifest.json   {"format": "strata-checkpoint", "version": 1, "step",
//                                    "identity": {model, layout, seed, ...}, "run_id",
//                                    "shards": [{"rank", "file", "bytes", "fnv1a64"}]}
//   D/.strata-train.lock             flock held by the job that writes D (claim_checkpoint_dir)
//
// A folder belongs to one run: a job holds D/.strata-train.lock for its whole life (a
// second job on D is refused), and a fresh run (no --resume) refuses a folder that holds
// complete checkpoints, which belong to another run. "run_id" names the run that wrote a
// checkpoint; a resumed run carries the id of the checkpoint it resumed.
//
// Every file is written atomically (temp file + rename); a step directory without a
// manifest is incomplete and ignored. Loading checks the identity (model, layout, seed,
// batch, world size) against the run and each shard's size and FNV-1a checksum against
// the manifest; any mismatch is an InputError on every rank, never a silent load.
// Shard layout (little-endian): "STRATACK", uint32 version, uint32 rank, int64 step,
// uint64 params, uint64 state, then params, exp_avg, exp_avg_sq as float32.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "runtime/checkpoint_manifest.h"

namespace strata::runtime {


struct CheckpointShard {
  std::int64_t step = 0;
  std::string run_id;             // the run that wrote it ("" in manifests before run ids)
  std::vector<float> params;      // the rank's flat parameter buffer
  std::vector<float> exp_avg;     // AdamW moments of the rank's owned range
  std::vector<float> exp_avg_sq;
};

std::string checkpoint_step_dir(const std::string& dir, std::int64_t step);

inline constexpr const char* kLockFile = ".strata-train.lock";

// An exclusive flock on DIR/.strata-train.lock for the object's life (released when the
// process ends, however it ends). InputError naming the holder when another job has it.
class CheckpointDirLock {
 public:
  explicit CheckpointDirLock(const std::string& dir);
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

// Rank 0's claim on a checkpoint folder before training: creates it, takes the lock, and
// without `resume` refuses a folder that already holds a complete checkpoint (another
// run's: pick another folder or --resume). Keep the returned lock until the job ends.
std::unique_ptr<CheckpointDirLock> claim_checkpoint_dir(const std::string& dir, bool resume);

// A fresh run id: random bits, the clock and the pid, as hex.
std::string new_run_id();

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
