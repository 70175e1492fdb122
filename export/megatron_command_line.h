// The words of a Megatron-LM command line (pretrain_gpt.py arguments, optionally after a
// torchrun / python -m torch.distributed.run prefix and environment assignments), before
// export/import_megatron.h reads the modelled flags into a job.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "export/imported_job.h"

namespace strata::exports {

// Shell words of `text`: quotes, backslash escapes and line continuations resolved, `#`
// comments dropped. InputError on an unterminated quote.
std::vector<std::string> shell_words(const std::string& text, const std::string& source);

// `v` as the positive integer a flag takes; InputError naming `flag` and `source` otherwise.
std::int64_t flag_positive_int(const std::string& flag, const std::string& v, const std::string& source);

// Launcher prefix: VAR=value assignments, torchrun (or python -m torch.distributed.run)
// options, the interpreter; the arguments start after the training script (*.py). Sets
// job.world_size from --nnodes x --nproc_per_node; returns the index of the first argument.
std::size_t read_launcher(const std::vector<std::string>& words, ImportedJob& job,
                          const std::string& source);

// The arguments from words[i] on: each modelled flag with its value ("" for a flag without
// one); operational flags go to job.ignored, any other flag is refused, all named at once.
std::map<std::string, std::string> read_flags(const std::vector<std::string>& words, std::size_t i,
                                              ImportedJob& job, const std::string& source);

}  // namespace strata::exports
