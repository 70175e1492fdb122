#include "common/progress_bar.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace strata {

void ProgressBar::update(std::int64_t done, std::int64_t total) {
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::milliseconds(500)) return;
  if (drawn_ && now - last_ < std::chrono::milliseconds(100) && done < total) return;
  last_ = now;
  drawn_ = true;
  const int width = 30;
  const double f = total > 0 ? std::clamp(static_cast<double>(done) / total, 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(f * width);
  fmt::print(stderr, "\r[{}{}] {:3.0f}% {}/{} {}", std::string(filled, '#'), std::string(width - filled, ' '),
             f * 100, done, total, unit_);
  std::fflush(stderr);
}

ProgressBar::~ProgressBar() {
  if (drawn_) fmt::print(stderr, "\r{}\r", std::string(80, ' '));
}

}  // namespace strata
