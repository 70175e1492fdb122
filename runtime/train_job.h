// A `strata train` job on the CPU ranks of an MPI job: the plan's model trained with the
// plan's layout to cfg.steps, rank 0 printing one line per step and writing the metrics
// file, checkpoints saved and resumed. The command line builds the TrainJob (flags, the
// plan, what it reads from the plan's cluster); run_training_job does the rest.
//
// Errors and MPI: set-up failures (the world size, memory, data files, checkpoints) are
// agreed on by every rank before training starts and raised on all of them alike, so the
// caller prints one `error:` line. Once training runs a failure may hit one rank only while
// the others wait in a collective: that rank prints its `error:` line and calls MPI_Abort,
// which ends every rank of the job (exit 2 for input errors, 1 otherwise). Divergence
// (TrainingDiverged) is the same on every rank and propagates.
#pragma once
#include <cstdint>
#include <string>

#include "planner/plan.h"
#include "runtime/train_config.h"

namespace strata::runtime {

struct TrainJob {
  planner::Plan plan;
  std::string plan_path;          // named in the memory pre-flight's messages
  std::string plan_note;          // printed in the job header (e.g. a stale stored prediction)
  TrainConfig cfg;
  std::string metrics_path;       // one JSON line per step (train_output.h); empty: none
  std::int64_t log_every = 1;     // a step line every K steps, and at the last
  double device_reserve_gib = 0;  // the workspace the plan's memory prediction includes
  // Test hooks, off at 0 / empty: before step die_at_step, rank min(die_rank, world - 1) is
  // killed (SIGKILL); before step throw_at_step it throws an InputError; grad_norms_path gets
  // the first step's per-parameter gradient norms (JSON).
  std::int64_t die_at_step = 0, throw_at_step = 0;
  int die_rank = 1;
  std::string grad_norms_path;
};

void run_training_job(const TrainJob& job);

}  // namespace strata::runtime
