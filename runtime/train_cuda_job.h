// `strata train --backend cuda`: a TrainJob (train_job.h) on one GPU in one process, by
// CudaTraining (train_cuda.h), with the CPU job's step lines (plus the optimizer's time and
// the MFU) and metrics file. Checkpoints and the test hooks are the CPU job's only.
#pragma once
#include <string>

#include "runtime/train_job.h"

namespace strata::runtime {

// gemm_dtype: bf16, tf32 or fp32. peak_flops: the dense FLOP/s of that dtype on the plan's
// device (the caller reads it from the plan's cluster; <= 0: none, no MFU printed).
// InputError when launched on more than one MPI rank.
void run_cuda_training_job(const TrainJob& job, const std::string& gemm_dtype, double peak_flops);

}  // namespace strata::runtime
