#include "kernels/profiler/group_reduce.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace strata::kernels::profiler {

std::vector<double> gather_all(Communicator* comm, double value) {
  if (comm == nullptr || comm->size() == 1) return {value};
  // Two floats per rank (hi + lo part) keep ~48 bits of the double.
  float mine[2] = {static_cast<float>(value), 0.0f};
  if (std::isfinite(mine[0])) mine[1] = static_cast<float>(value - static_cast<double>(mine[0]));
  std::vector<float> all(2 * static_cast<std::size_t>(comm->size()));
  comm->all_gather(mine, all.data(), 2);
  std::vector<double> out(static_cast<std::size_t>(comm->size()));
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r] = static_cast<double>(all[2 * r]) + static_cast<double>(all[2 * r + 1]);
  return out;
}

double max_over_ranks(Communicator* comm, double value) {
  auto v = gather_all(comm, value);
  return *std::max_element(v.begin(), v.end());
}

double sum_over_ranks(Communicator* comm, double value) {
  auto v = gather_all(comm, value);
  return std::accumulate(v.begin(), v.end(), 0.0);
}

}  // namespace strata::kernels::profiler
