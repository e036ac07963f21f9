#include "src/common/progress.hpp"

#include <cstdio>

namespace dfmp2 {

void Progress::message(const std::string& text) const {
  if (!quiet_) std::fprintf(stderr, "%s\n", text.c_str());
}

void Progress::begin(const std::string& stage) {
  stage_ = stage;
  start_ = last_print_ = Clock::now();
}

void Progress::fraction(double done) {
  if (quiet_) return;
  const auto now = Clock::now();
  if (done < 1.0 && now - last_print_ < std::chrono::milliseconds(500)) return;
  last_print_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double left = done > 0.0 ? elapsed * (1.0 - done) / done : 0.0;
  std::fprintf(stderr, "%s: %5.1f%% done, %.1f s elapsed, ~%.1f s left\n", stage_.c_str(),
               100.0 * done, elapsed, left);
}

}  // namespace dfmp2
