// Runs the dfmp2 executable as a user would and captures what it printed.
#pragma once

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/src/temp_dir.hpp"

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A file of the source tree: source("inputs/water.xyz").
inline std::string source(const std::string& relative) { return std::string(DFMP2_SOURCE_DIR) + "/" + relative; }

// Runs a shell command line; quote paths with spaces.
inline CommandResult run_command(const std::string& command_line) {
  TempDir dir;
  const std::string out = dir.path("stdout"), err = dir.path("stderr");
  const std::string command = command_line + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_text(out);
  result.err = read_text(err);
  return result;
}

// stderr without dfmp2's notes (e.g. on the OpenBLAS kernels this machine's environment chose),
// which precede errors on some machines and not on others.
inline std::string without_notes(const std::string& err) {
  std::istringstream lines(err);
  std::string line, kept;
  while (std::getline(lines, line))
    if (line.rfind("dfmp2: note:", 0) != 0) kept += line + "\n";
  return kept;
}

// `args` is appended to the executable's path as shell words.
inline CommandResult run_dfmp2(const std::string& args) {
  return run_command(std::string(DFMP2_EXE) + " " + args);
}

// dfmp2 started in the background, stdout and stderr to files in `dir`, held before it runs
// until start(): the caller knows its pid first (to prepare files named after it).
class BackgroundDfmp2 {
 public:
  // `ignored` (e.g. SIGINT) starts ignored, as in a job a shell put in the background.
  BackgroundDfmp2(const std::vector<std::string>& args, const TempDir& dir, int ignored = 0)
      : err_path_(dir.path("background.err")) {
    const std::string out_path = dir.path("background.out");
    std::vector<std::string> words = {DFMP2_EXE};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    int gate[2];
    if (pipe(gate) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {  // only async-signal-safe calls until exec
      close(gate[1]);
      char byte;
      while (read(gate[0], &byte, 1) > 0) {
      }
      for (int signal : {SIGINT, SIGTERM}) std::signal(signal, signal == ignored ? SIG_IGN : SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int in = open("/dev/null", O_RDONLY);
      if (out < 0 || err < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        _exit(126);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(gate[0]);
    gate_ = gate[1];
  }
  ~BackgroundDfmp2() {
    if (gate_ >= 0) close(gate_);
    if (pid_ > 0 && !finished_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  BackgroundDfmp2(const BackgroundDfmp2&) = delete;
  BackgroundDfmp2& operator=(const BackgroundDfmp2&) = delete;

  pid_t pid() const { return pid_; }
  void start() {
    close(gate_);
    gate_ = -1;
  }
  std::string err() const { return read_text(err_path_); }
  // True until it has ended.
  bool running() {
    if (!finished_ && waitpid(pid_, &status_, WNOHANG) == pid_) finished_ = true;
    return !finished_;
  }
  // The wait status (WIFSIGNALED, WTERMSIG…) once it has ended.
  int wait() {
    if (!finished_ && waitpid(pid_, &status_, 0) == pid_) finished_ = true;
    return status_;
  }

 private:
  std::string err_path_;
  pid_t pid_ = -1;
  int gate_ = -1;
  bool finished_ = false;
  int status_ = 0;
};
