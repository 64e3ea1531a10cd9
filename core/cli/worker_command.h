// `memsweep worker`: runs ONE experiment cell and writes its result JSON. The sweep runner
// starts it in a child process for every cell; it is not meant to be typed by users.
//
//   memsweep worker --cell cell.toml --source experiments/x.toml --result out.json [--summary s.txt]
//
// stdout carries progress lines ("progress STEP STEPS TOKENS_PER_S PEAK_BYTES") for the runner.
// Exit codes: 0 the result was written (status ok or oom), 1 the run failed (result written
// with status "failed"), 2 the cell file is invalid.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace memsweep::cli {

struct WorkerOptions {
  std::string cell_path;
  std::string source;
  std::string result_path;
  std::string summary_path;  // optional: the human-readable summary table
};

void AddWorkerCommand(CLI::App& app, WorkerOptions& options, int& exit_code);

}  // namespace memsweep::cli
