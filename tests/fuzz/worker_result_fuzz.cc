// libFuzzer target: a worker's result file as the sweep runner reads it back and records it
// (core/sweep/worker_result.cc: the JSON, the status it states, every table its figures go to).
// Whatever the file holds, the run must end recorded — with its figures, or failed with why —
// and the database must take the next run: a ResultsError here would have stopped the sweep.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/results/results_db.h"
#include "core/sweep/worker_result.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

memsweep::results::ResultsDb& Db() {
  static const auto db = [] {
    const std::string path = (memsweep::fuzz::ScratchDir() / "results.db").string();
    unlink(path.c_str());
    return std::make_unique<memsweep::results::ResultsDb>(
        path, memsweep::results::ResultsDb::Mode::kReadWrite);
  }();
  return *db;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int64_t runs = 0;
  const std::string path =
      memsweep::fuzz::WriteScratch("result.json", memsweep::fuzz::AsText(data, size));
  const std::optional<nlohmann::json> result = memsweep::sweep::ReadWorkerResult(path);
  if (!result) return 0;  // the runner records such a cell failed without figures
  const memsweep::sweep::ResultStatus stated = memsweep::sweep::StatusOfResult(*result);
  memsweep::sweep::TextIn(*result, "device", "device");
  memsweep::sweep::TextIn(*result, "environment", "compute_capability");

  memsweep::results::ResultsDb& db = Db();
  static const int64_t experiment = db.EnsureExperiment("fuzz", "fuzz.toml", "");
  memsweep::results::CellInfo cell;
  cell.cell_hash = "cell" + std::to_string(++runs);
  cell.cell_index = runs;
  cell.reference_hash = "cell1";  // every run's losses are verified against the first's
  const int64_t run = db.ClaimRun(experiment, cell, getpid());
  memsweep::sweep::RecordOutcome(db, run, stated.status, stated.error, &*result, nullptr);
  return 0;
}
