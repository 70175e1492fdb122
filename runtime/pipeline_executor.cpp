#include "runtime/pipeline_executor.h"

#include <fmt/format.h>

#include "common/errors.h"

namespace strata::runtime {

PipelineExecutor::PipelineExecutor(std::vector<ModelChunk<float>*> chunks,
                                   kernels::Communicator* pp_comm)
    : chunks_(std::move(chunks)), pp_(pp_comm) {}

namespace {

std::vector<float> take(std::map<std::pair<int, int>, std::vector<float>>& m, std::pair<int, int> key,
                        const char* what) {
  auto it = m.find(key);
  STRATA_CHECK(it != m.end(), "pipeline: no {} for micro-batch {} chunk {}", what, key.first, key.second);
  std::vector<float> v = std::move(it->second);
  m.erase(it);
  return v;
}

// `n` floats from pipeline stage `peer` (blocking).
std::vector<float> receive_from_stage(kernels::Communicator* pp, std::size_t n, int peer) {
  STRATA_CHECK(pp != nullptr, "pipeline receive without a pipeline group");
  std::vector<float> buf(n);
  pp->recv(buf.data(), n, peer);
  return buf;
}

}  // namespace

void PipelineExecutor::start_send(std::map<Key, std::vector<float>>& buffers, Key key, const char* what,
                                  int peer) {
  STRATA_CHECK(pp_ != nullptr, "pipeline send without a pipeline group");
  std::vector<float> buf = take(buffers, key, what);
  reap_sends(false);
  auto pending = pp_->isend(buf.data(), buf.size(), peer);  // moving buf keeps its storage
  in_flight_.emplace_back(std::move(pending), std::move(buf));
}

void PipelineExecutor::reap_sends(bool wait_all) {
  if (wait_all)
    for (auto& f : in_flight_) f.first->wait();
  std::erase_if(in_flight_, [](auto& f) { return f.first->done(); });
}

double PipelineExecutor::run(const std::vector<planner::ScheduleStep>& steps,
                             const MicroBatchFn& data, float token_weight,
                             const ParamsDoneFn& grads_final) {
  double loss = 0;
  std::vector<std::int32_t> tokens, targets;
  std::vector<std::size_t> last_backward(chunks_.size(), steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i].kind == planner::StepKind::Backward && steps[i].chunk >= 0 &&
        static_cast<std::size_t>(steps[i].chunk) < chunks_.size())
      last_backward[static_cast<std::size_t>(steps[i].chunk)] = i;
  for (std::size_t index = 0; index < steps.size(); ++index) {
    const planner::ScheduleStep& s = steps[index];
    STRATA_CHECK(s.chunk >= 0 && static_cast<std::size_t>(s.chunk) < chunks_.size(),
                 "schedule names chunk {} of {}", s.chunk, chunks_.size());
    ModelChunk<float>& chunk = *chunks_[static_cast<std::size_t>(s.chunk)];
    const Key key{s.microbatch, s.chunk};
    const std::size_t n = chunk.activation_size();
    switch (s.kind) {
      case planner::StepKind::RecvActivation: {
        inputs_[key] = receive_from_stage(pp_, n, s.peer_stage);
        break;
      }
      case planner::StepKind::Forward: {
        const ChunkLayout& l = chunk.layout();
        if (l.embedding || l.head) data(s.microbatch, tokens, targets);
        std::vector<float> in;
        if (!l.embedding) in = take(inputs_, key, "received activation");
        std::vector<float> out(l.head ? 0 : n);
        loss += chunk.forward(acts_[key], tokens.data(), targets.data(), in.data(), out.data(),
                              token_weight);
        if (!l.head) outputs_[key] = std::move(out);
        break;
      }
      case planner::StepKind::SendActivation: {
        start_send(outputs_, key, "activation to send", s.peer_stage);
        break;
      }
      case planner::StepKind::RecvGrad: {
        grad_outputs_[key] = receive_from_stage(pp_, n, s.peer_stage);
        break;
      }
      case planner::StepKind::Backward: {
        const ChunkLayout& l = chunk.layout();
        std::vector<float> dout;
        if (!l.head) dout = take(grad_outputs_, key, "received gradient");
        std::vector<float> din(l.embedding ? 0 : n);
        auto it = acts_.find(key);
        STRATA_CHECK(it != acts_.end(), "backward of micro-batch {} chunk {} before its forward",
                     s.microbatch, s.chunk);
        const bool last = last_backward[static_cast<std::size_t>(s.chunk)] == index;
        chunk.backward(it->second, dout.data(), din.data(),
                       last ? grads_final : ParamsDoneFn{});
        acts_.erase(it);
        if (!l.embedding) grad_inputs_[key] = std::move(din);
        break;
      }
      case planner::StepKind::SendGrad: {
        start_send(grad_inputs_, key, "gradient to send", s.peer_stage);
        break;
      }
    }
  }
  reap_sends(true);
  // Outputs whose next stage is on this rank never appear (pp == 1 has one chunk holding
  // the whole model); anything left is a schedule bug.
  STRATA_CHECK(inputs_.empty() && outputs_.empty() && grad_outputs_.empty() &&
                   grad_inputs_.empty() && acts_.empty(),
               "pipeline step list left unconsumed buffers");
  return loss;
}

}  // namespace strata::runtime
