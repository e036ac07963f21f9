#include "src/common/progress.hpp"

#include <cstdio>

namespace dfmp2 {

void Progress::message(const std::string& text) const {
  if (!quiet_) std::fprintf(sink_, "%s\n", text.c_str());
}

void Progress::begin(const std::string& stage) {
  stage_ = stage;
  start_ = last_print_ = Clock::now();
  printed_ = false;
}

void Progress::fraction(double done) {
  if (quiet_) return;
  const auto now = Clock::now();
  // At most twice a second; the end of a stage that took a second or more always.
  if (done < 1.0 && now - last_print_ < std::chrono::milliseconds(500)) return;
  if (done >= 1.0 && !printed_ && now - start_ < std::chrono::seconds(1)) return;
  last_print_ = now;
  printed_ = true;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double left = done > 0.0 ? elapsed * (1.0 - done) / done : 0.0;
  std::fprintf(sink_, "%s: %5.1f%% done, %.1f s elapsed, ~%.1f s left\n", stage_.c_str(),
               100.0 * done, elapsed, left);
}

}  // namespace dfmp2
