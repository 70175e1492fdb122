// torchrun lines and scripts, and Slurm batch scripts (export/launch.h).
//
// torchrun's flags, as torch/distributed/run.py (get_args_parser) defines them, each also
// spelled with dashes: --nnodes, --nproc_per_node, --rdzv_backend (default static),
// --rdzv_endpoint HOST:PORT, --rdzv_id (the same on every node), --node_rank. config_from_args
// hands --node_rank to the rendezvous only for the static backend; c10d numbers the nodes as
// they join, so the c10d scripts here write no --node_rank.
//
// torchrun on more than one node: a script to run on each of them, started by hand or by
// a scheduler other than Slurm, with MASTER_ADDR naming the node that hosts the c10d
// rendezvous (a required variable: the script stops with a message without it).
//
// Slurm: one task per node (srun --ntasks-per-node=1), each a torchrun that starts the
// node's GPUs as local workers. torchrun's c10d rendezvous backend (PyTorch "torchrun
// (Elastic Launch)" docs: --nnodes, --nproc-per-node, --rdzv-id, --rdzv-backend c10d,
// --rdzv-endpoint HOST:PORT) is hosted on the allocation's first node, which
// `scontrol show hostnames "$SLURM_JOB_NODELIST"` lists first; the rendezvous hands out node
// ranks (every node runs the same line). #SBATCH options: --job-name, --nodes, --ntasks-per-node, --gpus-per-node,
// --exclusive (sbatch man page, Slurm 23.02+).
#include "export/launch.h"

#include <cctype>

#include <fmt/format.h>

#include "common/errors.h"
#include "export/export_common.h"
#include "export/safe_text.h"

namespace strata::exports {

Launcher launcher_from_string(const std::string& s) {
  if (s == "torchrun") return Launcher::Torchrun;
  if (s == "slurm") return Launcher::Slurm;
  input_error("--launcher '{}' is not one of: torchrun, slurm", one_line(s));
}

std::vector<std::string> launcher_names() { return {"torchrun", "slurm"}; }

namespace {

// GPUs per node: the cluster's, else 8 when that divides the world, else one node of all.
int per_node(const LaunchSpec& spec) {
  if (spec.gpus_per_node > 0) return spec.gpus_per_node;
  return spec.gpus % 8 == 0 ? 8 : spec.gpus;
}

// "X=1; unset Y": the environment as one line for a comment.
std::string env_summary(const LaunchSpec& spec) {
  std::string out;
  for (const auto& [name, value] : spec.env)
    out += (out.empty() ? "" : "; ") + (value.empty() ? "unset " + name : name + "=" + value);
  return out;
}

// [A-Za-z0-9._-] only: a job name safe in an #SBATCH line.
std::string slurm_job_name(const std::string& name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '-';
  return out.empty() ? "strata" : out;
}

// A here-document delimiter that no line of `content` equals.
std::string heredoc_tag(const std::string& content) {
  std::string tag = "STRATA_EOF";
  while (content.find("\n" + tag + "\n") != std::string::npos || content.rfind(tag + "\n", 0) == 0)
    tag += "_";
  return tag;
}

std::string slurm_script(const LaunchSpec& spec, const std::string& comments,
                         const std::string& entry, const std::vector<Arg>& args) {
  const int node_gpus = per_node(spec);
  if (spec.gpus % node_gpus != 0)
    input_error("--launcher slurm: the plan's {} GPUs do not fill whole nodes of {} GPUs (the "
                "cluster's gpus_per_node); plan a multiple of {} GPUs",
                spec.gpus, node_gpus, node_gpus);
  const int nodes = spec.gpus / node_gpus;
  std::string out = "#!/bin/bash\n";
  out += fmt::format("#SBATCH --job-name={}\n", slurm_job_name(spec.job_name));
  out += fmt::format("#SBATCH --nodes={}\n", nodes);
  out += "#SBATCH --ntasks-per-node=1\n";
  out += fmt::format("#SBATCH --gpus-per-node={}\n", node_gpus);
  out += "#SBATCH --exclusive\n";
  out += comments;
  out += "set -euo pipefail\n";
  for (const auto& [name, value] : spec.env)
    out += value.empty() ? fmt::format("unset {}\n", name) : fmt::format("export {}={}\n", name, value);
  for (const auto& f : spec.files) {
    const std::string tag = heredoc_tag(f.content);
    out += fmt::format("cat > {} <<'{}'\n{}{}{}\n", f.path, tag, f.content,
                       f.content.empty() || f.content.back() == '\n' ? "" : "\n", tag);
  }
  out += "# torchrun's c10d rendezvous on the first node of the allocation; it gives each node\n"
         "# its node rank.\n";
  out += "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n";
  out += "MASTER_PORT=${MASTER_PORT:-29500}\n";
  out += "export MASTER_ADDR MASTER_PORT\n";
  const std::string command = fmt::format(
      "srun --nodes={} --ntasks-per-node=1 --kill-on-bad-exit=1 \\\n"
      "  torchrun --nnodes {} --nproc_per_node {} --rdzv_id \"$SLURM_JOB_ID\" --rdzv_backend c10d "
      "--rdzv_endpoint \"$MASTER_ADDR:$MASTER_PORT\" {}",
      nodes, nodes, node_gpus, entry);
  return out + arg_lines(command, args);
}

// Each node runs the same script; the rendezvous id defaults to the job name (RDZV_ID
// overrides it, for two jobs of one plan at once).
std::string torchrun_nodes_script(const LaunchSpec& spec, int nodes, int node_gpus, const std::string& comments,
                                  const std::string& entry, const std::vector<Arg>& args) {
  std::string out = "#!/bin/bash\n" + comments;
  out += comment_lines({fmt::format("run this script on each of the {} nodes with the same MASTER_ADDR, the address "
                                    "of the node that hosts torchrun's c10d rendezvous (MASTER_PORT, default 29500, "
                                    "free there); the rendezvous gives each node its rank",
                                    nodes)});
  out += "set -euo pipefail\n";
  for (const auto& [name, value] : spec.env)
    out += value.empty() ? fmt::format("unset {}\n", name) : fmt::format("export {}={}\n", name, value);
  out += ": \"${MASTER_ADDR:?set MASTER_ADDR to the address of the rendezvous node, the same on every node}\"\n";
  out += "MASTER_PORT=${MASTER_PORT:-29500}\n";
  const std::string command = fmt::format(
      "torchrun --nnodes {} --nproc_per_node {} --rdzv_id \"${{RDZV_ID:-{}}}\" --rdzv_backend c10d "
      "--rdzv_endpoint \"$MASTER_ADDR:$MASTER_PORT\" {}",
      nodes, node_gpus, slurm_job_name(spec.job_name), entry);
  return out + arg_lines(command, args);
}

}  // namespace

std::string launch_text(Launcher launcher, const LaunchSpec& spec, const std::string& comments,
                        const std::string& entry, const std::vector<Arg>& args) {
  if (launcher == Launcher::Slurm) return slurm_script(spec, comments, entry, args);
  // GPUs that do not fill whole nodes run as one node.
  const int node_gpus = spec.gpus % per_node(spec) == 0 ? per_node(spec) : spec.gpus;
  const int nodes = spec.gpus / node_gpus;
  if (nodes > 1) return torchrun_nodes_script(spec, nodes, node_gpus, comments, entry, args);
  // One node: one line, its environment said in a comment.
  const std::string env = env_summary(spec);
  return comments + (env.empty() ? "" : comment_lines({"launch environment: " + env})) +
         arg_lines(fmt::format("torchrun --nnodes 1 --nproc_per_node {} {}", node_gpus, entry), args);
}

}  // namespace strata::exports
