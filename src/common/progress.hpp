// Progress of long work on stderr: SCF iterations and the share of a stage done, with an
// estimate of the time left. Silent when quiet.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace dfmp2 {

class Progress {
 public:
  explicit Progress(bool quiet, std::FILE* sink = stderr) : quiet_(quiet), sink_(sink) {}

  void message(const std::string& text) const;
  // Starts a stage whose share done is then reported with fraction().
  void begin(const std::string& stage);
  // Rate-limited; the last call (done = 1) prints when the stage took a second or more.
  void fraction(double done);

 private:
  using Clock = std::chrono::steady_clock;
  bool quiet_;
  std::FILE* sink_;
  bool printed_ = false;  // a line of this stage
  std::string stage_;
  Clock::time_point start_, last_print_;
};

}  // namespace dfmp2
