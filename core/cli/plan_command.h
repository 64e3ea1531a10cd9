// `memsweep plan FILE`: expands an experiment file's [matrix] and repeats into cells, validates
// every cell and lists them (index, repeat, seed, hash, parameters) without running anything.
// With --stages it also lists, for each cell (or the --cell ones), what runs at each stage:
// the strategies' declared hooks and the slot capabilities the trainer asks for, in order
// (core/train/stage_listing.h); cells whose listing is the same share one.
// With --write-cells DIR it also writes each cell as DIR/cell<index>-<hash>.toml: the file
// `memsweep worker --cell` runs, e.g. as a rank under torchrun or srun (docs/distributed.md).
//
//   memsweep plan experiments/quickstart.toml --set strategies.batching.seq_len=128
//   memsweep plan experiments/x.toml --write-cells cells/
//   memsweep plan experiments/quickstart.toml --stages --cell 3
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/cli/exit_code.h"

namespace memsweep::cli {

struct PlanOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set section.key=value
  std::string cells_dir;               // --write-cells DIR; "" writes nothing
  bool stages = false;                 // --stages
  std::vector<int64_t> stage_cells;    // --cell N (repeatable): the cells --stages lists; all
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code`.
void AddPlanCommand(CLI::App& app, PlanOptions& options, ExitCode& exit_code);

}  // namespace memsweep::cli
