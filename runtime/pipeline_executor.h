// PipelineExecutor: runs one training step's forward and backward passes on this
// pipeline rank by walking the step list of planner::build_schedule (GPipe, 1F1B or
// interleaved 1F1B) -- the same list the simulator times. Activations and gradients
// (Nl x C floats per micro-batch) move by send/recv on the pipeline group, whose rank i
// is pipeline stage i. Sends do not wait for the receiver (Communicator::isend): a stage
// goes on to its next step while its output travels, as the simulator's comm stream
// assumes; the buffer stays here until the send completes (all done by the end of run).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "planner/schedule.h"
#include "runtime/model_chunk.h"

namespace strata::runtime {

// tokens and targets (micro_batch * seq each) of micro-batch `mb` of this step.
using MicroBatchFn = std::function<void(int mb, std::vector<std::int32_t>& tokens,
                                        std::vector<std::int32_t>& targets)>;

class PipelineExecutor {
 public:
  // chunks[c] = model chunk c of this rank (virtual stage c * pp + stage). `pp_comm` may
  // be null when pp == 1.
  PipelineExecutor(std::vector<ModelChunk<float>*> chunks, kernels::Communicator* pp_comm);

  // Executes `steps`; returns the sum of the loss contributions computed here (non-zero
  // only on the rank holding the head). Gradients accumulate into the parameter store.
  // `grads_final`, when given, hears of each component's parameters during the last
  // backward of their chunk in `steps`, when their gradients for the step are complete
  // (the data-parallel reduction starts on them while the backward pass goes on).
  double run(const std::vector<planner::ScheduleStep>& steps, const MicroBatchFn& data,
             float token_weight, const ParamsDoneFn& grads_final = {});

 private:
  using Key = std::pair<int, int>;  // (micro-batch, chunk)
  std::vector<ModelChunk<float>*> chunks_;
  kernels::Communicator* pp_;
  std::map<Key, std::vector<float>> inputs_, outputs_, grad_outputs_, grad_inputs_;
  std::map<Key, ChunkActivations<float>> acts_;
  // Sends in flight with the buffers they read from.
  std::vector<std::pair<std::unique_ptr<kernels::PendingRequest>, std::vector<float>>> in_flight_;

  // Sends the buffer `key` of `buffers` (`what`, taken out of it) to stage `peer`
  // without waiting.
  void start_send(std::map<Key, std::vector<float>>& buffers, Key key, const char* what, int peer);
  void reap_sends(bool wait_all);
};

}  // namespace strata::runtime
