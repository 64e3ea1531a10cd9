// A hand-built 2 x 2 ablation with known figures, for the compare tests (library and CLI).
//
//   cell  a  b    runs                         peak   reserved  tokens/s  final loss
//   0     1  "x"  2 ok repeats                 1000   2000      100, 300  3.0, 2.0
//   1     2  "x"  1 ok                         500    1000      400       2.75
//   2     1  "y"  1 ok                         1500   3000      100       2.25
//   3     2  "y"  1 oom                        4000   4096      -         -
//   4     1  "z"  1 failed (never compared)
#pragma once

#include <string>

#include "core/results/results_db.h"
#include "support/results_db_fixtures.h"

namespace memsweep::testing_support {

struct AblationDb {
  int64_t experiment_id = 0;
  int64_t run_of_cell2 = 0;
};

inline AblationDb BuildAblationDb(const std::string& path) {
  using results::RunStatus;
  results::ResultsDb db(path, results::ResultsDb::Mode::kReadWrite);
  db.EnsureExperiment("older", "older.toml", "[experiment]\nname = \"older\"\n");
  AblationDb ablation;
  ablation.experiment_id = db.EnsureExperiment("ablation", "ablation.toml", "[matrix]\n");
  const auto add = [&](const std::string& hash, int64_t cell_index, int64_t repeat,
                       const std::string& params, RunStatus status, const nlohmann::json& result) {
    const int64_t run =
        db.ClaimRun(ablation.experiment_id, MakeCell(hash, cell_index, repeat, params), 1);
    db.FinishRun(run, status, status == RunStatus::kOk ? "" : "did not finish", &result);
    return run;
  };
  add("c0r0", 0, 0, R"({"a":1,"b":"x"})", RunStatus::kOk,
      FiguresResult("ok", 1000, 2000, 100, 3.0));
  add("c0r1", 0, 1, R"({"a":1,"b":"x"})", RunStatus::kOk,
      FiguresResult("ok", 1000, 2000, 300, 2.0));
  add("c1", 1, 0, R"({"a":2,"b":"x"})", RunStatus::kOk, FiguresResult("ok", 500, 1000, 400, 2.75));
  ablation.run_of_cell2 = add("c2", 2, 0, R"({"a":1,"b":"y"})", RunStatus::kOk,
                              FiguresResult("ok", 1500, 3000, 100, 2.25));
  add("c3", 3, 0, R"({"a":2,"b":"y"})", RunStatus::kOom, FiguresResult("oom", 4000, 4096, 0, 0));
  add("c4", 4, 0, R"({"a":1,"b":"z"})", RunStatus::kFailed, FiguresResult("failed", 9, 9, 9, 9));
  return ablation;
}

}  // namespace memsweep::testing_support
