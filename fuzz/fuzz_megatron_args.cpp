// libFuzzer target: the Megatron-LM command-line import (exports::import_megatron_args), which
// reads a file a user hands to `strata simulate --from megatron`. Accepted jobs are written
// back as a Megatron-LM command (exports::export_megatron) that must import to the same job.
#include "export/export_formats.h"
#include "export/import_megatron.h"
#include "fuzz/fuzz_target.h"

namespace {

strata::exports::ImportedJob parse_job(const std::string& text, const std::string& source) {
  strata::exports::ImportedJob job = strata::exports::import_megatron_args(text, source);
  // Without a launcher prefix the world is one data-parallel replica.
  const std::int64_t tp_pp = std::int64_t{job.strategy.tp} * job.strategy.pp * job.strategy.cp;
  if (job.world_size == 0 && tp_pp > (1 << 20)) throw strata::InputError("tp x pp x cp too large");
  strata::exports::resolve_world_size(job, job.world_size > 0 ? 0 : static_cast<int>(tp_pp),
                                      source);
  return job;
}

std::string write_job(const strata::exports::ImportedJob& job) {
  strata::planner::Plan p;
  p.model = job.model;
  p.model.name = "fuzz";  // the import names the model after its file
  p.cluster = "fuzz";
  p.strategy = job.strategy;
  p.stage_layers = job.stage_layers;
  return strata::exports::export_megatron(
      p, strata::exports::apply_overrides(strata::costmodel::SoftwareStack{}, job.stack));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return strata::fuzz::check_parser(data, size, parse_job, write_job);
}
