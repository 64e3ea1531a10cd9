// A results database shaped like the quickstart's: a 2 x 2 matrix over device.memory_budget and
// strategies.batching.micro_batch_size (dotted keys, as real experiments have), one cell out of
// memory, MiB-sized figures and long verdict reasons, for the tests of tables that must fit a
// terminal.
//
//   BuildQuickstartShapeDb(path);   // experiment "quickstart", cells 0..3, cell 2 oom
#pragma once

#include <string>

#include "core/results/results_db.h"
#include "support/results_db_fixtures.h"

namespace memsweep::testing_support {

inline void BuildQuickstartShapeDb(const std::string& path) {
  using results::RunStatus;
  results::ResultsDb db(path, results::ResultsDb::Mode::kReadWrite);
  const int64_t experiment =
      db.EnsureExperiment("quickstart", "quickstart.toml", "[matrix]\n");
  const auto add = [&](int64_t cell_index, const std::string& budget, int micro_batch,
                       RunStatus status, const nlohmann::json& result) {
    const std::string params = R"({"device.memory_budget":")" + budget +
                               R"(","strategies.batching.micro_batch_size":)" +
                               std::to_string(micro_batch) + "}";
    const int64_t run = db.ClaimRun(
        experiment, MakeCell("q" + std::to_string(cell_index), cell_index, 0, params), 1);
    db.FinishRun(run, status,
                 status == RunStatus::kOk ? ""
                                          : "memsweep device out of memory. Tried to allocate "
                                            "512.00 KiB; 23.54 MiB allocated of a 24.00 MiB "
                                            "budget in forward of step 0",
                 &result);
  };
  add(0, "24MiB", 2, RunStatus::kOk, FiguresResult("ok", 15142912, 15142912, 56128.8, 3.20503));
  add(1, "64MiB", 2, RunStatus::kOk, FiguresResult("ok", 15142912, 15142912, 58092.9, 3.20503));
  add(2, "24MiB", 8, RunStatus::kOom, FiguresResult("oom", 24683520, 24683520, 0, 0));
  add(3, "64MiB", 8, RunStatus::kOk, FiguresResult("ok", 54925312, 54925312, 62487.4, 3.13966));
}

}  // namespace memsweep::testing_support
