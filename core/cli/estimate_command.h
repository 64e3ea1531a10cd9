// `memsweep estimate FILE`: every cell's memory before a byte is allocated — peak allocated and
// reserved bytes, their breakdown, where the peak falls, the largest allocation, and on a named
// GPU or capacity the verdict (fits with its headroom, or the out-of-memory error a run would
// print) — from the cell's own training loop run on the meta device (docs/estimate.md).
//
//   memsweep estimate experiments/gpu-seed-qwen-lora.toml --device a10g
//   memsweep estimate experiments/quickstart.toml --device 24GiB --format csv
//   memsweep estimate experiments/gpu-quickstart.toml --arch sm_90   # run on an H100 / H200
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/cli/exit_code.h"
#include "core/cli/table_width.h"

namespace memsweep::cli {

struct EstimateOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set section.key=value
  std::string device;                  // --device NAME|SIZE ("" = each cell's own)
  std::string format = "table";        // table | csv | json | markdown
  std::string arch;                    // --arch sm_90|9.0|90: the GPU that runs the cells
  std::string source;  // --source FILE (hidden): `file` is one cell file of that experiment
  std::string auto_device;  // --auto-device cpu|cuda (hidden): the device an "auto" cell took
  TableWidthOptions width;  // --wide, --columns (the table format)
};

// Registers the subcommand; when it runs, its exit code is stored in `exit_code`.
void AddEstimateCommand(CLI::App& app, EstimateOptions& options, ExitCode& exit_code);

}  // namespace memsweep::cli
