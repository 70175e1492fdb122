#include "common/stop_signals.h"

#include <csignal>
#include <cstring>
#include <string>

namespace strata {

namespace {

volatile std::sig_atomic_t g_signal = 0;
int g_depth = 0;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];

extern "C" void record_signal(int sig) {
  if (g_signal == 0) g_signal = sig;
}

std::string signal_text(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(sig);
  }
}

}  // namespace

Stopped::Stopped(int signal)
    : std::runtime_error("stopped by " + signal_text(signal) + ": the child processes were ended"), signal_(signal) {}

StopSignals::StopSignals() {
  if (g_depth++ > 0) return;
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = record_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking wait returns EINTR and looks at the flag
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &g_previous[i]);
}

StopSignals::~StopSignals() {
  if (--g_depth > 0) return;
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
}

int stop_signal() { return g_signal; }

void throw_if_stopped() {
  if (const int sig = g_signal) throw Stopped(sig);
}

}  // namespace strata
