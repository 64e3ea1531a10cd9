#include "core/sweep/cell_runner.h"

#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/comm/process_group.h"
#include "core/comm/rank_env.h"
#include "core/config/run_config_loader.h"
#include "core/config/strategy_resolver.h"
#include "core/experiment/cell.h"
#include "core/launch/rank_launcher.h"
#include "core/launch/rank_results.h"
#include "core/memory/byte_size.h"
#include "core/memory/rss.h"
#include "core/run_files/run_report.h"
#include "core/sweep/cell_process.h"
#include "core/train/trainer.h"

namespace memsweep::sweep {
namespace {

// An allocation the host refused — std::bad_alloc, or LibTorch's CPU allocator failing — is host
// memory running out (an RLIMIT_AS cap on the worker, or the machine itself), not the device
// budget: the error says so first, with the limit when there is one.
std::string WithHostMemoryCause(const std::string& error) {
  if (error.find("std::bad_alloc") == std::string::npos &&
      error.find("can't allocate memory") == std::string::npos) {
    return error;
  }
  std::string cause = "out of host memory (not the device budget): the worker could not allocate";
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    cause += " within its address-space limit (RLIMIT_AS " +
             memory::FormatBytes(static_cast<int64_t>(limit.rlim_cur)) + ")";
  }
  return cause + "; give the cell less to hold (a smaller micro-batch or sequence) or run it "
                 "where more memory is free: " + error;
}

// How long the other ranks may go on after one failed before the launcher kills them.
constexpr double kRankGraceSeconds = 10.0;

namespace fs = std::filesystem;

config::ValidatedRun LoadCell(const WorkerFiles& options) {
  std::ifstream in(options.cell);
  if (!in) throw config::ConfigError(options.cell + ": cannot read the cell file");
  std::stringstream text;
  text << in.rdbuf();
  const experiment::Cell cell = experiment::CellFromToml(text.str(), options.cell);
  try {
    return config::ValidatedRunFromTable(cell.document, options.source);
  } catch (const config::ConfigError& e) {
    // The cell file is the runner's temporary copy: point at the experiment file's lines.
    throw config::ConfigError(cell.InExperimentFile(e.what()));
  }
}

// Writes the run's allocation history beside its result (`<result>.snapshot.pickle`, written
// beside and renamed) and names it in the result JSON, from which the runner stores it
// (core/results/run_result_store.cc). Nothing when the run recorded none.
void WriteMemorySnapshot(const std::string& result_path, const memory::MemorySnapshot& snapshot,
                         nlohmann::json& json) {
  if (snapshot.pickle.empty()) return;
  const fs::path path = fs::absolute(result_path + ".snapshot.pickle");
  try {
    run_files::WriteFileAtomically(path.string(), snapshot.pickle);
  } catch (const std::exception& e) {
    std::cerr << "memsweep: the allocation history could not be written to " << path.string()
              << " (" << e.what() << "); the run is stored without it\n";
    return;
  }
  json["memory_snapshot"] = {{"file", path.string()},
                             {"format", memory::kMemorySnapshotFormat},
                             {"events", snapshot.events}};
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

// Trains the cell in this process: the whole run, or one rank of it when `rank_env` is set.
CellRun RunCell(const WorkerFiles& options, config::ValidatedRun run,
                 const std::optional<dist::RankEnv>& rank_env) {
  const config::RunConfig& cfg = run.config;
  train::RunResult result;
  std::unique_ptr<dist::ProcessGroup> group;
  // Destroyed only once the result is written: a strategy whose destructor crashes ends the
  // worker by a signal, and the runner then keeps the figures it wrote (core/sweep/sweep_runner).
  std::unique_ptr<train::Trainer> trainer_owner;
  const int rank = rank_env ? rank_env->rank : 0;
  if (!run.oom_before_run.empty()) {
    // The device cannot hold the parameters: an oom with its reason, nothing trained.
    result.status = train::RunStatus::kOom;
    result.error = run.oom_before_run;
  } else try {
    trainer_owner = std::make_unique<train::Trainer>(cfg, std::move(run.strategies));
    train::Trainer& trainer = *trainer_owner;  // validation's own strategy instances
    // Rank 0's history only: the ranks of a data-parallel run allocate alike (docs/snapshot.md).
    if (rank == 0) trainer.RecordMemoryHistory(cfg.experiment.memory_history);
    if (rank_env) {
      trainer.SetDeviceIndex(rank_env->local_rank);  // cuda:LOCAL_RANK (used on CUDA only)
      group = std::make_unique<dist::ProcessGroup>(*rank_env, cfg.device.collective_timeout_seconds,
                                                   trainer.RunDevice());
      trainer.SetCommunicator(&group->Comm());
    }
    if (rank == 0) {
      trainer.OnStep([&cfg](const train::StepRecord& s) {
        const double tokens_per_s = s.seconds > 0 ? s.tokens / s.seconds : 0.0;
        // The host figures let the runner say how much host memory a worker had taken if the
        // host's OOM killer ends it (core/sweep/progress_line.h).
        std::printf("progress %lld %lld %.1f %lld %lld %lld\n",
                    static_cast<long long>(s.step + 1),
                    static_cast<long long>(cfg.experiment.steps), tokens_per_s,
                    static_cast<long long>(s.peak_allocated_bytes),
                    static_cast<long long>(memory::PeakRssBytes()),
                    static_cast<long long>(s.host_pool_peak_bytes));
        std::fflush(stdout);
      });
    }
    result = trainer.Run();
  } catch (const std::exception& e) {
    result.status = train::RunStatus::kFailed;
    result.error = e.what();
  }
  if (result.status == train::RunStatus::kFailed) result.error = WithHostMemoryCause(result.error);
  if (rank_env && rank != 0) result.dist.rank = rank;
  nlohmann::json json = run_files::RunResultToJson(cfg, result);
  json["dist"] = dist::RankRow(result);
  // Ranks that finished well share their figures; a rank that did not exits at once, so that
  // the others' collectives fail fast instead of waiting for it.
  if (group && result.status == train::RunStatus::kOk) {
    try {
      dist::CollectRankRows(*group, result, json);
    } catch (const std::exception& e) {
      result.status = train::RunStatus::kFailed;
      result.error = std::string("collecting the ranks' figures: ") + e.what();
      json["status"] = "failed";
      json["error"] = result.error;
    }
  }
  if (rank == 0) WriteMemorySnapshot(options.result, result.memory_snapshot, json);
  if (rank == 0 && !options.summary.empty()) {
    std::ofstream(options.summary) << run_files::FormatRunSummary(cfg, result);
  }
  run_files::WriteJsonFile(rank == 0 ? options.result
                                  : dist::RankResultPath(options.result, rank),
                        json);
  if (!result.error.empty()) std::cerr << result.error << "\n";
  trainer_owner.reset();
  if (rank_env) return result.status == train::RunStatus::kOk ? CellRun::kRecorded : CellRun::kFailed;
  return result.status == train::RunStatus::kFailed ? CellRun::kFailed : CellRun::kRecorded;
}

// device.world_size > 1 on one machine: the same worker command as N ranks (torchrun's
// contract), then one result for the cell.
CellRun LaunchCellRanks(const WorkerFiles& options, const config::RunConfig& cfg) {
  const std::vector<std::string> argv = WorkerArgv(options);
  const int world = cfg.device.world_size;
  for (int r = 0; r < world; ++r) {
    std::remove((r == 0 ? options.result : dist::RankResultPath(options.result, r)).c_str());
  }
  const std::vector<dist::RankExit> exits =
      dist::LaunchRanks(argv, world, options.result + ".rank", kRankGraceSeconds);
  std::vector<nlohmann::json> rank_results;
  for (int r = 0; r < world; ++r) {
    const std::string path = r == 0 ? options.result : dist::RankResultPath(options.result, r);
    rank_results.push_back(ReadJson(path));
    if (r != 0) std::remove(path.c_str());
  }
  bool all_ok = true;
  for (const auto& exit : exits) all_ok = all_ok && exit.Ok();
  if (all_ok && !rank_results[0].is_null()) return CellRun::kRecorded;
  train::RunResult failed;
  failed.status = train::RunStatus::kFailed;
  nlohmann::json merged = dist::MergeFailedGroup(exits, rank_results,
                                                 run_files::RunResultToJson(cfg, failed));
  run_files::WriteJsonFile(options.result, merged);
  std::cerr << merged.value("error", "") << "\n";
  return merged.value("status", "failed") == "oom" ? CellRun::kRecorded : CellRun::kFailed;
}

}  // namespace

std::vector<std::string> WorkerArgv(const WorkerFiles& files) {
  std::vector<std::string> argv = {SelfExecutable(), "worker", "--cell", files.cell, "--source",
                                   files.source, "--result", files.result};
  if (!files.summary.empty()) {
    argv.push_back("--summary");
    argv.push_back(files.summary);
  }
  return argv;
}

CellRun RunCellFiles(const WorkerFiles& options) {
  config::RefuseFailedStartupPlugins();
  config::ValidatedRun run = LoadCell(options);
  const config::RunConfig& cfg = run.config;
  const std::optional<dist::RankEnv> rank_env = dist::RankEnvFromEnvironment();
  if (rank_env && rank_env->world_size != cfg.device.world_size) {
    throw config::ConfigError(options.cell + ": [device] world_size = " +
                              std::to_string(cfg.device.world_size) + " but " +
                              rank_env->world_size_variable + "=" +
                              std::to_string(rank_env->world_size) +
                              " in the environment; start as many ranks as the cell has");
  }
  if (!rank_env && run.config.device.world_size > 1) return LaunchCellRanks(options, run.config);
  return RunCell(options, std::move(run), rank_env);
}

}  // namespace memsweep::sweep
