// Running the memsweep binary as a user would, for command-line tests.
//
//   Outcome out = RunMemsweep("plan " + SourcePath("experiments/quickstart.toml"));
//   EXPECT_EQ(out.exit_code, 0) << out.output;
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace memsweep::testing_support {

struct Outcome {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// A shell command line, its stdout and stderr together.
inline Outcome RunShell(const std::string& command_line) {
  const std::string command = command_line + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// `env`: optional "NAME=value" assignments (or a command such as prlimit) placed before it.
inline Outcome RunMemsweep(const std::string& args, const std::string& env = "") {
  return RunShell(env + (env.empty() ? "" : " ") + std::string(MEMSWEEP_BINARY) + " " + args);
}

// An empty directory of its own under the test temp directory.
inline std::filesystem::path FreshTempDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("memsweep_cli_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace memsweep::testing_support
