// Progress of long work on stderr: SCF iterations and the share of a stage done, with an
// estimate of the time left. Silent when quiet.
#pragma once

#include <chrono>
#include <string>


namespace dfmp2 {

class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet) {}

  void message(const std::string& text) const;
  // Starts a stage whose share done is then reported with fraction().
  void begin(const std::string& stage);
  void fraction(double done);  // rate-limited; the last call (done = 1) always prints

 private:
  using Clock = std::chrono::steady_clock;
  bool quiet_;
  std::string stage_;
  Clock::time_point start_, last_print_;
};

}  // namespace dfmp2
