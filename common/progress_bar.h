// ProgressBar: a one-line bar on stderr for a long loop ("[####   ]  40% 400/1000
// candidates"), redrawn at most every 100 ms and only once the loop has run for half a
// second, so short runs print nothing; erased when it goes out of scope. The caller
// decides whether stderr is a terminal.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace strata {

class ProgressBar {
 public:
  explicit ProgressBar(std::string unit) : unit_(std::move(unit)) {}
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(std::int64_t done, std::int64_t total);

 private:
  std::string unit_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
  bool drawn_ = false;
};

}  // namespace strata
