// How an exported training command is started: one `torchrun` line on one node, a script
// to run on each node that rendezvouses torchrun (c10d) at $MASTER_ADDR, or a Slurm batch
// script (`strata export --launcher slurm`) that allocates the plan's nodes, rendezvouses
// torchrun on the first one and runs the framework's command on all of them. Internal to export/ (the options are in export/export_formats.h).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "export/export_formats.h"

namespace strata::exports {

// One file a Slurm script writes next to itself before launching (a framework config the
// command reads), so the script is the whole job.
struct InlineFile {
  std::string path;     // relative to the submission directory
  std::string content;  // written verbatim (a quoted here-document)
};

// What a launcher needs beyond the framework's arguments.
struct LaunchSpec {
  int gpus = 0;           // world size: the plan's GPU count
  int gpus_per_node = 0;  // the cluster's; 0: 8 when it divides gpus, else all on one node
  std::string job_name;   // any text: reduced to [A-Za-z0-9._-] for #SBATCH --job-name
  // Environment the framework needs: (name, value) exported, or (name, "") unset.
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<InlineFile> files;
};

// The launch text: `comments` (already "# " lines) first (after the #SBATCH block for
// Slurm, after "#!/bin/bash" for a torchrun script of several nodes), the environment
// (exported, or a comment for one torchrun line), then torchrun running `entry` (a script
// path, or "-m module") with `args`, one per line. Slurm: InputError naming --launcher
// when the GPUs do not fill whole nodes.
std::string launch_text(Launcher launcher, const LaunchSpec& spec, const std::string& comments,
                        const std::string& entry, const std::vector<Arg>& args);

}  // namespace strata::exports
