// CollectiveError: agreeing on a failure across ranks. A step that may fail on some
// ranks only (reading a data file, a checkpoint shard) records its error locally; then
// every rank calls throw_if_any_rank_failed, and if any rank failed, *every* rank throws
// the same exception (the lowest failing rank's message and kind). No rank is left
// waiting in a collective that a failed rank will never reach.
#pragma once
#include <string>

#include "kernels/backend.h"

namespace strata::runtime {

enum class ErrorKind { None = 0, Input = 1, Device = 2, Internal = 3 };

struct LocalError {
  ErrorKind kind = ErrorKind::None;
  std::string message;
};

// Runs `fn`, turning InputError / DeviceError / other exceptions into a LocalError.
template <typename Fn>
LocalError capture_error(Fn&& fn);

// Collective over `comm`. Throws InputError, DeviceError or InternalError on every rank
// when any rank's `local` holds an error.
void throw_if_any_rank_failed(kernels::Communicator& comm, const LocalError& local);

}  // namespace strata::runtime

#include "common/errors.h"

namespace strata::runtime {

template <typename Fn>
LocalError capture_error(Fn&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return {ErrorKind::Input, e.what()};
  } catch (const DeviceError& e) {
    return {ErrorKind::Device, e.what()};
  } catch (const std::exception& e) {
    return {ErrorKind::Internal, e.what()};
  }
  return {};
}

}  // namespace strata::runtime
