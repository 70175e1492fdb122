// ProcessGrid: this rank's place in the plan's (dp, tp, pp, cp) grid and one communicator
// per axis, created from the pure RankGrid arithmetic (costmodel/rank_grid.h) so the
// runtime and the cost model agree on which world ranks form each group (lesson 2).
// Also the embedding group (first and last pipeline stage of each (dp, tp)), which
// all-reduces the gradient of a tied embedding held by both.
#pragma once
#include <memory>
#include <vector>

#include "costmodel/rank_grid.h"
#include "kernels/backend.h"
#include "kernels/cpu/mpi_communicator.h"

namespace strata::runtime {

// Mixture-of-experts folding (Megatron-Core): the ranks of a pipeline stage, numbered tp
// fastest, then cp, then dp (tp-cp-ep-dp-pp), are read as etp fastest, then ep, then edp
// (costmodel::expert_group_ranks, the same arithmetic). The world ranks of `world_rank`'s
// expert-parallel group (ep ranks holding different experts), expert data-parallel group
// (edp ranks holding the same expert slices) and expert tensor-parallel group (etp ranks
// holding slices of the same experts), in group-rank order. Pure arithmetic; InputError
// when ep x etp does not divide the stage's tp x cp x dp ranks.
std::vector<int> expert_parallel_ranks(const costmodel::RankGrid& grid, int ep, int world_rank, int etp = 1);
std::vector<int> expert_data_parallel_ranks(const costmodel::RankGrid& grid, int ep, int world_rank, int etp = 1);
std::vector<int> expert_tensor_parallel_ranks(const costmodel::RankGrid& grid, int ep, int world_rank, int etp);

class ProcessGrid {
 public:
  // Collective over MPI_COMM_WORLD (MPI must be initialized). Throws InputError on every
  // rank when the world size differs from grid.world_size(). `ep`, `etp`: expert-parallel
  // and expert tensor-parallel sizes (1, 1 = every rank holds every expert whole).
  explicit ProcessGrid(const costmodel::RankGrid& grid, int ep = 1, int etp = 1);

  const costmodel::RankGrid& grid() const { return grid_; }
  costmodel::RankCoords coords() const { return coords_; }
  int world_rank() const { return world_rank_; }
  int world_size() const { return grid_.world_size(); }
  bool first_stage() const { return coords_.pp == 0; }
  bool last_stage() const { return coords_.pp == grid_.pp() - 1; }

  kernels::Communicator& world() { return *world_; }
  kernels::Communicator& tp() { return *tp_; }   // rank in group = coords().tp
  kernels::Communicator& pp() { return *pp_; }   // rank in group = coords().pp (the stage)
  kernels::Communicator& dp() { return *dp_; }   // rank in group = coords().dp
  kernels::Communicator& cp() { return *cp_; }   // rank in group = coords().cp
  // The ranks of one (tp, pp) across dp and cp (rank = dp * cp + cp index): gradients are
  // summed, and ZeRO shards split, over it (Megatron-Core's data-parallel group "with
  // context parallel"); the dp group itself when cp == 1.
  kernels::Communicator& dp_cp() { return cp_ && grid_.cp() > 1 ? *dp_cp_ : *dp_; }
  // {first stage, last stage} of this (dp, tp, cp) when pp > 1 and this rank is one of them;
  // null otherwise.
  kernels::Communicator* embedding() { return embedding_.get(); }
  // Expert parallel: the ep group (rank in group = ep_rank()) and the expert data-parallel
  // group over which routed experts' gradients are summed (the stage's tp x cp x dp / ep
  // ranks holding the same experts).
  int ep_size() const { return ep_size_; }
  int ep_rank() const { return ep_rank_; }
  int etp_size() const { return etp_size_; }
  int etp_rank() const { return etp_rank_; }
  kernels::Communicator& ep() { return *ep_; }
  kernels::Communicator& edp() { return *edp_; }
  kernels::Communicator& etp() { return *etp_; }

 private:
  costmodel::RankGrid grid_;
  int world_rank_ = 0;
  costmodel::RankCoords coords_;
  int ep_size_ = 1, ep_rank_ = 0, etp_size_ = 1, etp_rank_ = 0;
  std::unique_ptr<kernels::MpiCommunicator> world_, tp_, pp_, dp_, cp_, dp_cp_, embedding_, ep_, edp_, etp_;
};

}  // namespace strata::runtime
