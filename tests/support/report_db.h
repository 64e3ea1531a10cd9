// A results database with everything the HTML report draws, for the report tests: a "study"
// experiment (two ok cells from the recorded quickstart run, timelines and losses included, an
// oom cell under a budget, a two-rank cell, a failed cell), an ablation (baseline, two steps,
// all), and "study-gpu": study's cell 0 again on CUDA (the same configuration apart from
// [device]).
#pragma once

#include <string>

#include "core/results/results_db.h"
#include "support/results_db_fixtures.h"

namespace memsweep::testing_support {

inline nlohmann::json ReportRun(const std::string& device, int64_t scale, double tokens_per_s) {
  nlohmann::json result = RecordedRunResult();
  nlohmann::json& memory = result["memory"];
  for (const char* key : {"peak_allocated_bytes", "peak_reserved_bytes", "activations_bytes",
                          "saved_activations_bytes"}) {
    memory[key] = memory[key].get<int64_t>() * scale;
  }
  memory["trainable_params_bytes"] = memory["params_bytes"];
  memory["frozen_params_bytes"] = 0;
  result["summary"]["tokens_per_s"] = tokens_per_s;
  result["device"] = {{"device", device}, {"budget_bytes", 256 << 20}};
  return result;
}

inline results::CellInfo ReportCell(const std::string& hash, int64_t index,
                                    const std::string& params, const std::string& config) {
  results::CellInfo cell = MakeCell(hash, index, 0, params);
  cell.config_json = config;
  return cell;
}

inline void BuildReportDb(const std::string& path) {
  using results::RunStatus;
  results::ResultsDb db(path, results::ResultsDb::Mode::kReadWrite);
  const std::string config = R"({"experiment":{"name":"study","steps":3},"device":{"type":"cpu"},)"
                             R"("model":{"preset":"tiny"}})";
  const std::string gpu_config = R"({"experiment":{"name":"study-gpu","steps":3},)"
                                 R"("device":{"type":"cuda"},"model":{"preset":"tiny"}})";
  const int64_t study = db.EnsureExperiment("study", "study.toml", "[experiment]\n");
  auto add = [&](int64_t experiment, const results::CellInfo& cell, RunStatus status,
                 const std::string& error, const nlohmann::json& result) {
    const int64_t run = db.ClaimRun(experiment, cell, 1);
    db.FinishRun(run, status, error, &result);
  };
  add(study, ReportCell("s0", 0, R"({"strategies.batching.micro_batch_size":2})", config),
      RunStatus::kOk, "", ReportRun("cpu", 1, 5000.0));
  add(study,
      ReportCell("s1", 1, R"({"strategies.batching.micro_batch_size":4})",
                 R"({"experiment":{"name":"study","steps":3},"device":{"type":"cpu"},)"
                 R"("model":{"preset":"tiny"},"mb":4})"),
      RunStatus::kOk, "", ReportRun("cpu", 2, 7000.0));
  nlohmann::json oom = FiguresResult("oom", 250 << 20, 256 << 20, 0, 0);
  oom["device"] = {{"device", "cpu"}, {"budget_bytes", 256 << 20}};
  oom["oom"] = {{"requested_bytes", 4 << 20}, {"stage", "forward"}};
  // Its timeline stops in the set-up and the first step's start, as a run failing in step 0's
  // forward does.
  const nlohmann::json recorded = RecordedRunResult()["timeline"];
  for (size_t i = 0; i < 5; ++i) oom["timeline"].push_back(recorded[i]);
  add(study, ReportCell("s2", 2, R"({"strategies.batching.micro_batch_size":8})", "{}"),
      RunStatus::kOom, "memsweep device out of memory. Tried to allocate 4.00 MiB <&> (stage: forward)",
      oom);
  nlohmann::json ranks = FiguresResult("ok", 3000, 4096, 900, 2.5);
  ranks["ranks"] = nlohmann::json::array();
  for (int rank = 0; rank < 2; ++rank) {
    ranks["ranks"].push_back({{"rank", rank},
                              {"status", "ok"},
                              {"peak_allocated_bytes", 3000 - rank * 100},
                              {"peak_reserved_bytes", 4096},
                              {"params_bytes", 1000},
                              {"grads_bytes", 500},
                              {"optimizer_bytes", 1000 + rank},
                              {"activations_bytes", 500 - rank * 101}});
  }
  add(study, ReportCell("s3", 3, R"({"strategies.batching.micro_batch_size":16})", "{}"),
      RunStatus::kOk, "", ranks);
  add(study, ReportCell("s4", 4, R"({"strategies.batching.micro_batch_size":32})", "{}"),
      RunStatus::kFailed, "worker crashed (signal 11)", FiguresResult("failed", 0, 0, 0, 0));

  const int64_t ablation = db.EnsureExperiment("steps", "steps.toml", "[[ablation]]\n");
  const std::vector<std::pair<std::string, int64_t>> steps = {
      {"baseline", 1000}, {"+half", 500}, {"+quarter", 250}, {"all", 100}};
  for (size_t i = 0; i < steps.size(); ++i) {
    add(ablation,
        ReportCell("a" + std::to_string(i), static_cast<int64_t>(i),
                   R"({"ablation":")" + steps[i].first + "\"}", "{}"),
        RunStatus::kOk, "", FiguresResult("ok", steps[i].second, steps[i].second, 100, 2.0));
  }

  const int64_t gpu = db.EnsureExperiment("study-gpu", "study-gpu.toml", "[device]\n");
  add(gpu, ReportCell("g0", 0, R"({"strategies.batching.micro_batch_size":2})", gpu_config),
      RunStatus::kOk, "", ReportRun("cuda:0", 1, 90000.0));
  // study's cell 0 kept an allocation history (the bytes do not matter here).
  results::SqliteConnection raw(path, results::SqliteConnection::Access::kReadWrite);
  raw.Execute("INSERT INTO memory_snapshots (run_id, format, events, bytes) SELECT id, "
              "'memory_viz', 4175, x'80' FROM runs WHERE cell_hash = 's0'");
}

}  // namespace memsweep::testing_support
