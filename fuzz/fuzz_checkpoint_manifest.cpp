// libFuzzer target: the checkpoint manifest reader (runtime::parse_checkpoint_manifest).
// Any input is accepted or refused with InputError; what is accepted holds exactly one
// shard per rank, each a plain file name inside the step folder.
#include "fuzz/fuzz_target.h"
#include "runtime/checkpoint_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const strata::runtime::CheckpointIdentity id = {{"model", "tiny"}, {"dp", "2"}};
  strata::runtime::CheckpointManifest m;
  try {
    m = strata::runtime::parse_checkpoint_manifest(text, "ckpt/step_00000003/manifest.json", 3, id, 2);
  } catch (const strata::InputError&) {
    return 0;
  }
  if (m.step != 3 || m.shards.size() != 2) __builtin_trap();
  for (const auto& s : m.shards)
    if (s.file.empty() || s.file.find('/') != std::string::npos || s.file == "." || s.file == "..")
      __builtin_trap();
  return 0;
}
