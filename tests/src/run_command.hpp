// Runs the dfmp2 executable as a user would and captures what it printed.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>

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

// `args` is appended to the executable's path as shell words.
inline CommandResult run_dfmp2(const std::string& args) {
  return run_command(std::string(DFMP2_EXE) + " " + args);
}
