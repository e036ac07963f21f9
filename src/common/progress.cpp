#include "src/common/progress.hpp"

#include <cstdio>
#include <utility>

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

Progress::Step::Step(const Progress& progress, std::string what, std::chrono::milliseconds after)
    : progress_(progress), what_(std::move(what)), start_(Clock::now()) {
  if (progress_.quiet_) return;
  watch_ = std::thread([this, after] {
    std::unique_lock lock(mutex_);
    if (ended_.wait_for(lock, after, [this] { return done_; })) return;
    said_ = true;
    char so_far[48];
    std::snprintf(so_far, sizeof so_far, " (%.1f s so far)", std::chrono::duration<double>(after).count());
    progress_.message("dfmp2: " + what_ + so_far);
  });
}

Progress::Step::~Step() {
  if (!watch_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    done_ = true;
  }
  ended_.notify_one();
  watch_.join();
  if (!said_) return;
  char line[64];
  std::snprintf(line, sizeof line, ": done in %.1f s", std::chrono::duration<double>(Clock::now() - start_).count());
  progress_.message("dfmp2: " + what_ + line);
}

}  // namespace dfmp2
