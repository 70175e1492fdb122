// User-facing error types. Library code throws; only cli/main.cpp catches and
// turns them into one `error:` line and an exit code (2 input, 3 no plan, 1 bug).
#pragma once
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace strata {

// Bad input the user can fix: malformed files, impossible flags, unknown names.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The input is valid but no strategy fits (memory, divisibility).
class NoFeasiblePlan : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An invariant inside strata failed: a bug, not the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// A device/runtime library (MPI, CUDA, NCCL, BLAS) reported failure.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum ExitCode : int { kExitOk = 0, kExitInternal = 1, kExitInput = 2, kExitNoPlan = 3 };

// This rank's part of an MPI job failed because of an error another rank (rank 0)
// reports itself: exit with `code` and print nothing, so the user reads one `error:`
// line instead of one per rank.
class ReportedByAnotherRank : public std::runtime_error {
 public:
  explicit ReportedByAnotherRank(int code) : std::runtime_error("reported by another rank"), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

template <typename... Args>
[[noreturn]] void input_error(fmt::format_string<Args...> f, Args&&... args) {
  throw InputError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace strata

// Invariant check: throws InternalError naming file:line and the condition.
#define STRATA_CHECK(cond, ...)                                                        \
  do {                                                                                 \
    if (!(cond))                                                                       \
      throw ::strata::InternalError(::fmt::format("{}:{}: check failed: {} {}",        \
                                                  __FILE__, __LINE__, #cond,           \
                                                  ::fmt::format("" __VA_ARGS__)));     \
  } while (0)
