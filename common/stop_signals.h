// Stopping a command that runs child processes (validate, calibrate's mpirun jobs) when
// the user presses Ctrl-C or a scheduler sends SIGTERM. The children run in their own
// process group, so a terminal's SIGINT reaches only strata: left to the default action
// strata would die at once and its mpirun and training ranks would keep running, with its
// temporary folder left behind. Inside a StopSignals scope SIGINT, SIGTERM and SIGHUP are
// recorded instead; the code waiting on a child sees stop_signal(), ends the child's
// group and throws Stopped, and the unwinding removes what the run created.
#pragma once
#include <stdexcept>

namespace strata {

// Thrown where a recorded signal is acted on; main exits with 128 + signal().
class Stopped : public std::runtime_error {
 public:
  explicit Stopped(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

// While alive, SIGINT, SIGTERM and SIGHUP set stop_signal() instead of ending the
// process; the previous handlers come back when it ends. Scopes may nest.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
};

// The first signal recorded in a StopSignals scope, 0 when none.
int stop_signal();
// Throws Stopped when a signal was recorded.
void throw_if_stopped();

}  // namespace strata
