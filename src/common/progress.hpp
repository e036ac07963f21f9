// Progress of long work on stderr: SCF iterations and the share of a stage done, with an
// estimate of the time left. Silent when quiet.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace dfmp2 {

class Progress {
  using Clock = std::chrono::steady_clock;

 public:
  explicit Progress(bool quiet, std::FILE* sink = stderr) : quiet_(quiet), sink_(sink) {}

  void message(const std::string& text) const;
  // Starts a stage whose share done is then reported with fraction().
  void begin(const std::string& stage);
  // Rate-limited; the last call (done = 1) prints when the stage took a second or more.
  void fraction(double done);

  // A step of work that reports no share done (a set-up phase): it says so once it has run
  // `after`, and how long it took when it ends (when the Step dies); a quicker one says nothing.
  class Step {
   public:
    Step(const Progress& progress, std::string what, std::chrono::milliseconds after = std::chrono::seconds(2));
    ~Step();
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

   private:
    const Progress& progress_;
    std::string what_;
    Clock::time_point start_;
    std::mutex mutex_;
    std::condition_variable ended_;
    bool done_ = false, said_ = false;
    std::thread watch_;  // waits `after` for the step to end; none when quiet
  };

 private:
  bool quiet_;
  std::FILE* sink_;
  bool printed_ = false;  // a line of this stage
  std::string stage_;
  Clock::time_point start_, last_print_;
};

}  // namespace dfmp2
