// `memsweep calibrate`: measures this machine's GEMM peaks afresh (the figures MFU divides by,
// docs/metrics.md "MFU") and keeps them, with when and under what load they were measured;
// `--show` lists the kept figures without measuring (as `memsweep --version` does).
//
//   memsweep calibrate                      # float32 and bfloat16 on the CPU, every core
//   memsweep calibrate --dtype bfloat16 --threads 8
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "core/cli/exit_code.h"

namespace memsweep::cli {

struct CalibrateOptions {
  std::vector<std::string> dtypes = {"float32", "bfloat16"};
  int threads = 0;  // 0: every available core, as a run's [device] threads
  std::string device = "cpu";
  bool show = false;
};

void AddCalibrateCommand(CLI::App& app, CalibrateOptions& options, ExitCode& exit_code);

// The kept calibrations with when and under what load each was measured, lines without a final
// newline; for `memsweep --version`.
std::string KeptCalibrationsText();

}  // namespace memsweep::cli
