// `memsweep plan FILE`: expands an experiment file's [matrix] and repeats into cells, validates
// every cell and lists them (index, repeat, seed, hash, parameters) without running anything.
//
//   memsweep plan experiments/quickstart.toml --set data.seq_len=128
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace memsweep::cli {

struct PlanOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set section.key=value
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code`.
void AddPlanCommand(CLI::App& app, PlanOptions& options, int& exit_code);

}  // namespace memsweep::cli
