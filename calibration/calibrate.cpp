// The calibration procedure (calibration/calibrate.h) as its steps
// (detail/calibration_steps.h): the sweep plan (input checks on every rank before MPI
// starts and before anything is measured), the measurements, and on rank 0 the
// efficiencies and the written profile; then every rank learns the outcome.
#include <exception>

#include <fmt/format.h>

#include "calibration/calibrate.h"
#include "calibration/detail/calibration_steps.h"
#include "common/errors.h"

namespace strata::calibration {

void calibrate(const CalibrationRequest& f, const CalibrationOutput& io) {
  const detail::SweepPlan plan = detail::plan_sweep(f, io);
  detail::Measurements m = detail::measure(f, io, plan);

  std::size_t failed = 0;
  for (const auto& g : m.gemms)
    if (!g.ok() && g.error.rfind("skipped", 0) != 0) ++failed;
  for (const auto& c : m.collectives)
    if (!c.ok()) ++failed;
  // Rank 0 reports and writes; a failure there (say, the disk filled up) must still
  // reach the other ranks, which wait in the final reduction below.
  std::exception_ptr root_error;
  if (m.root) try {
    detail::derive_efficiencies(plan, m);
    detail::write_profile(f, io, plan, m);
  } catch (...) {
    root_error = std::current_exception();
  }
  // Every rank learns whether any row failed or rank 0 could not finish, so all ranks
  // leave together with the same outcome.
  float status[2] = {m.root ? static_cast<float>(failed) : 0.0f, root_error ? 1.0f : 0.0f};
  m.world->all_reduce_sum(status, 2);
  if (root_error) std::rethrow_exception(root_error);
  // Rank 0 says what went wrong; the other ranks only fail with it.
  if (status[1] > 0) throw ReportedByAnotherRank(kExitInternal);
  const float failed_all = status[0];
  if (failed_all > 0 && !m.root) throw ReportedByAnotherRank(kExitInternal);
  if (failed_all > 0)
    throw DeviceError(fmt::format("{} measurement(s) failed validation and were left out of {}",
                                  static_cast<long>(failed_all), f.out));
}

}  // namespace strata::calibration
