#include "runtime/process_grid.h"

#include <fmt/format.h>

#include "common/errors.h"

namespace strata::runtime {

namespace {

// World rank of stage-local index `local` (tp fastest, then cp, then dp) in stage `pp`.
int stage_rank(const costmodel::RankGrid& g, int pp, int local) {
  const int t = local % g.tp(), c = local / g.tp() % g.cp(), d = local / (g.tp() * g.cp());
  return g.rank({d, t, pp, c});
}

int stage_index(const costmodel::RankGrid& g, int world_rank) {
  const auto c = g.coords(world_rank);
  return c.tp + g.tp() * (c.cp + g.cp() * c.dp);
}

void check_expert(const costmodel::RankGrid& g, int ep, int etp) {
  const int stage = g.tp() * g.cp() * g.dp();
  if (ep < 1 || etp < 1 || stage % (ep * etp) != 0)
    input_error("strategy.ep ({}) x strategy.etp ({}) must divide the ranks of a pipeline stage (tp x cp x dp "
                "= {})", ep, etp, stage);
}

enum class ExpertAxis { Etp, Ep, Edp };

// Stage-local index etp_i + etp (ep_i + ep edp_i): the group along `axis` through world_rank.
std::vector<int> expert_group(const costmodel::RankGrid& grid, int ep, int etp, int world_rank, ExpertAxis axis) {
  check_expert(grid, ep, etp);
  const int local = stage_index(grid, world_rank), pp = grid.coords(world_rank).pp;
  const int edp = grid.tp() * grid.cp() * grid.dp() / (ep * etp);
  const int t = local % etp, e = local / etp % ep, d = local / (etp * ep);
  auto at = [&](int ti, int ei, int di) { return stage_rank(grid, pp, ti + etp * (ei + ep * di)); };
  std::vector<int> out;
  switch (axis) {
    case ExpertAxis::Etp: for (int i = 0; i < etp; ++i) out.push_back(at(i, e, d)); break;
    case ExpertAxis::Ep: for (int i = 0; i < ep; ++i) out.push_back(at(t, i, d)); break;
    case ExpertAxis::Edp: for (int i = 0; i < edp; ++i) out.push_back(at(t, e, i)); break;
  }
  return out;
}

}  // namespace

std::vector<int> expert_parallel_ranks(const costmodel::RankGrid& grid, int ep, int world_rank, int etp) {
  return expert_group(grid, ep, etp, world_rank, ExpertAxis::Ep);
}

std::vector<int> expert_data_parallel_ranks(const costmodel::RankGrid& grid, int ep, int world_rank, int etp) {
  return expert_group(grid, ep, etp, world_rank, ExpertAxis::Edp);
}

std::vector<int> expert_tensor_parallel_ranks(const costmodel::RankGrid& grid, int ep, int world_rank, int etp) {
  return expert_group(grid, ep, etp, world_rank, ExpertAxis::Etp);
}

ProcessGrid::ProcessGrid(const costmodel::RankGrid& grid, int ep, int etp) : grid_(grid) {
  world_ = kernels::MpiCommunicator::world();
  const int world_size = world_->size();
  if (world_size != grid.world_size())
    input_error("the plan needs dp x tp x pp{} = {} x {} x {}{} = {} ranks but MPI started {} (run "
                "`mpirun -np {} strata train ...`)",
                grid.cp() > 1 ? " x cp" : "", grid.dp(), grid.tp(), grid.pp(),
                grid.cp() > 1 ? fmt::format(" x {}", grid.cp()) : "", grid.world_size(),
                world_size, grid.world_size());
  world_rank_ = world_->rank();
  coords_ = grid.coords(world_rank_);
  // MPI_Comm_split is collective over the world: every rank creates every axis in the
  // same order.
  tp_ = kernels::MpiCommunicator::from_groups(grid.all_groups(costmodel::Axis::Tp));
  pp_ = kernels::MpiCommunicator::from_groups(grid.all_groups(costmodel::Axis::Pp));
  dp_ = kernels::MpiCommunicator::from_groups(grid.all_groups(costmodel::Axis::Dp));
  cp_ = kernels::MpiCommunicator::from_groups(grid.all_groups(costmodel::Axis::Cp));
  std::vector<std::vector<int>> dp_cp_groups;
  for (int t = 0; t < grid.tp(); ++t)
    for (int p = 0; p < grid.pp(); ++p) {
      std::vector<int> g;
      for (int d = 0; d < grid.dp(); ++d)
        for (int c = 0; c < grid.cp(); ++c) g.push_back(grid.rank({d, t, p, c}));
      dp_cp_groups.push_back(std::move(g));
    }
  dp_cp_ = kernels::MpiCommunicator::from_groups(dp_cp_groups);
  std::vector<std::vector<int>> embedding_groups;
  if (grid.pp() > 1)
    for (int d = 0; d < grid.dp(); ++d)
      for (int t = 0; t < grid.tp(); ++t)
        for (int c = 0; c < grid.cp(); ++c)
          embedding_groups.push_back({grid.rank({d, t, 0, c}), grid.rank({d, t, grid.pp() - 1, c})});
  embedding_ = kernels::MpiCommunicator::from_groups(embedding_groups);
  ep_size_ = ep;
  etp_size_ = etp;
  ep_ = kernels::MpiCommunicator::from_groups({expert_parallel_ranks(grid, ep, world_rank_, etp)});
  edp_ = kernels::MpiCommunicator::from_groups({expert_data_parallel_ranks(grid, ep, world_rank_, etp)});
  etp_ = kernels::MpiCommunicator::from_groups({expert_tensor_parallel_ranks(grid, ep, world_rank_, etp)});
  ep_rank_ = stage_index(grid, world_rank_) / etp % ep;
  etp_rank_ = stage_index(grid, world_rank_) % etp;
  STRATA_CHECK(ep_ && ep_->rank() == ep_rank_ && ep_->size() == ep, "ep group order");
  STRATA_CHECK(etp_ && etp_->rank() == etp_rank_ && etp_->size() == etp, "etp group order");
  STRATA_CHECK(tp_ && pp_ && dp_, "rank {} is missing from an axis group", world_rank_);
  STRATA_CHECK(tp_->rank() == coords_.tp && tp_->size() == grid.tp(), "tp group order");
  STRATA_CHECK(pp_->rank() == coords_.pp && pp_->size() == grid.pp(), "pp group order");
  STRATA_CHECK(dp_->rank() == coords_.dp && dp_->size() == grid.dp(), "dp group order");
  STRATA_CHECK(cp_ && cp_->rank() == coords_.cp && cp_->size() == grid.cp(), "cp group order");
  STRATA_CHECK(dp_cp_ && dp_cp_->rank() == coords_.dp * grid.cp() + coords_.cp, "dp-cp group order");
}

}  // namespace strata::runtime
