#include "core/cli/snapshot_command.h"

#include <iostream>

#include "core/cli/command.h"
#include "core/run_files/run_report.h"
#include "core/results/results_db.h"

namespace memsweep::cli {
namespace {

// The most events a suggested re-run keeps: a few hundred thousand cover a small cell's steps.
constexpr int64_t kSuggestedHistory = 200000;

ExitCode Snapshot(const SnapshotOptions& options) {
  results::ResultsDb db(options.db_path, results::ResultsDb::Mode::kReadOnly);
  const std::string run = std::to_string(options.run_id);
  if (!db.FindRun(options.run_id)) {
    std::cerr << "error: " << options.db_path << " has no run " << run
              << " (memsweep query --db " << options.db_path
              << " \"SELECT run_id, experiment, cell_index, status FROM run_summary\" lists them)\n";
    return ExitCode::kInvalidInput;
  }
  const std::optional<results::StoredMemorySnapshot> snapshot = db.FindMemorySnapshot(options.run_id);
  if (!snapshot) {
    std::cerr << "error: run " << run << " has no allocation history: run its cell again with "
              << "[experiment] memory_history = " << kSuggestedHistory
              << " (memsweep run FILE --set experiment.memory_history=" << kSuggestedHistory
              << "), then memsweep snapshot the new run\n";
    return ExitCode::kInvalidInput;
  }
  try {
    run_files::WriteFileAtomically(options.output, snapshot->bytes);
  } catch (const std::exception& e) {
    std::cerr << "error: cannot write " << options.output << ": " << e.what()
              << " (choose another -o path)\n";
    return ExitCode::kInvalidInput;
  }
  std::cout << "snapshot: " << options.output << " (run " << run << ", " << snapshot->events
            << " allocator events, " << snapshot->bytes.size()
            << " bytes); open it at https://pytorch.org/memory_viz\n";
  return ExitCode::kOk;
}

}  // namespace

void AddSnapshotCommand(CLI::App& app, SnapshotOptions& options, ExitCode& exit_code) {
  CLI::App* snapshot = app.add_subcommand(
      "snapshot", "Write a run's allocation history for PyTorch's memory viewer "
                  "(runs with [experiment] memory_history)");
  snapshot->add_option("run", options.run_id, "The run's id (run_summary.run_id)")->required();
  snapshot->add_option("--db", options.db_path, "Results database")->capture_default_str();
  snapshot->add_option("-o,--output", options.output, "The .pickle file to write")->required();
  AddCommand(snapshot, exit_code, [&options] { return Snapshot(options); });
}

}  // namespace memsweep::cli
