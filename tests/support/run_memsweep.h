// Runs the memsweep binary (MEMSWEEP_BINARY) with a command line, as a user would, and returns
// its exit code and everything it printed (stdout and stderr).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace memsweep::testing_support {

struct MemsweepOutcome {
  int exit_code;
  std::string output;
};

inline MemsweepOutcome RunMemsweepCommand(const std::string& args) {
  const std::string command = std::string(MEMSWEEP_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace memsweep::testing_support
