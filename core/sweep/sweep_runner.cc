#include "core/sweep/sweep_runner.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "core/estimate/blas_workspaces.h"
#include "core/estimate/isolated_estimate.h"
#include "core/experiment/toml_json.h"
#include "core/memory/byte_size.h"
#include "core/results/results_db.h"
#include "core/sweep/cell_process.h"
#include "core/sweep/progress_line.h"
#include "core/sweep/worker_result.h"
#include "core/train/row_preview.h"

namespace memsweep::sweep {
namespace fs = std::filesystem;
namespace {

using results::RunStatus;

bool ShouldRun(RunStatus status, Rerun rerun) {
  switch (status) {
    case RunStatus::kPending:
    case RunStatus::kRunning:
      return true;
    case RunStatus::kOk:
    case RunStatus::kOom:
      return rerun == Rerun::kAll;
    case RunStatus::kFailed:
    case RunStatus::kTimeout:
      return rerun != Rerun::kNone;
  }
  return true;
}

results::CellInfo InfoOf(const experiment::Cell& cell) {
  results::CellInfo info;
  info.cell_hash = cell.hash;
  info.cell_index = cell.index;
  info.repeat = cell.repeat;
  info.seed = static_cast<int64_t>(cell.seed);
  info.config_json = experiment::TomlToJson(cell.document).dump();
  info.params_json = cell.params.dump();
  if (!cell.reference_hash.empty()) info.reference_hash = cell.reference_hash;
  return info;
}

// The outcome of one cell as the database records it.
struct Outcome {
  RunStatus status = RunStatus::kFailed;
  std::string error;
  std::optional<nlohmann::json> result;
};

// What the runner knows of a worker's host memory when it is killed: its peak resident set
// (from the kernel, else from its last progress line) and its host pool's peak.
std::string HostFigures(const CellExit& exit, const std::optional<WorkerProgress>& last) {
  std::string text;
  const int64_t rss = exit.max_rss_bytes > 0 ? exit.max_rss_bytes
                      : last && last->peak_rss_bytes > 0 ? last->peak_rss_bytes
                                                         : 0;
  if (rss > 0) text += "peak_rss_bytes " + memory::FormatBytes(rss);
  if (last && last->host_pool_peak_bytes >= 0) {
    text += std::string(text.empty() ? "" : ", ") + "host_pool_peak_bytes " +
            memory::FormatBytes(last->host_pool_peak_bytes) + " at step " +
            std::to_string(last->step) + "/" + std::to_string(last->steps);
  }
  return text;
}

// A worker ended by SIGKILL that the runner did not send: on Linux that is most often the host's
// OOM killer. Says so, whether the kernel counted an OOM kill meanwhile, and the host figures.
std::string DescribeKilledWorker(const CellExit& exit, const std::optional<WorkerProgress>& last,
                                 int64_t oom_kills_before, int64_t oom_kills_after) {
  std::string text = "worker " + exit.Describe() + ": most likely the host ran out of memory and ";
  const int64_t kills = oom_kills_before >= 0 && oom_kills_after >= 0
                            ? oom_kills_after - oom_kills_before
                            : -1;
  if (kills > 0) {
    text += "the kernel's OOM killer ended it (it killed " + std::to_string(kills) +
            (kills == 1 ? " process" : " processes") + " on this machine while the cell ran)";
  } else {
    text += "the kernel's OOM killer ended it, or another process sent SIGKILL (" +
            std::string(kills == 0 ? "the kernel counted no OOM kill while the cell ran"
                                   : "the kernel's OOM kill count is not readable here") +
            ")";
  }
  const std::string figures = HostFigures(exit, last);
  text += figures.empty() ? "; no host figures were reported" : "; worker host memory: " + figures;
  return text;
}

// What a worker that refused its cell's input said: the message it wrote after "error: " (its
// exit code 2, docs/cli.md), e.g. a plugin whose constructor threw in the worker alone; "" when
// it did not.
std::string WorkerRefusal(const CellExit& exit) {
  if (exit.kind != CellExitKind::kExited || exit.code != 2) return "";
  const std::string& tail = exit.stderr_tail;
  const size_t at = tail.rfind("\nerror: ");
  if (at != std::string::npos) return tail.substr(at + 8);
  return tail.rfind("error: ", 0) == 0 ? tail.substr(7) : "";
}

Outcome Judge(const CellExit& exit, const std::string& result_path, double timeout_seconds,
              const std::optional<WorkerProgress>& last, int64_t oom_kills_before) {
  Outcome outcome;
  if (exit.kind == CellExitKind::kTimedOut) {
    outcome.status = RunStatus::kTimeout;
    outcome.error = "timed out after " + std::to_string(static_cast<int64_t>(timeout_seconds)) +
                    " s (--cell-timeout)";
    if (!exit.stderr_tail.empty()) outcome.error += "\n" + exit.stderr_tail;
    return outcome;
  }
  outcome.result = ReadWorkerResult(result_path);
  // A worker that exited (not killed) and left a result wrote it for this cell: any older one
  // was deleted before it started. It exits 0 for ok and oom and 3 for failed (docs/cli.md).
  if (exit.kind == CellExitKind::kExited && outcome.result) {
    const ResultStatus stated = StatusOfResult(*outcome.result);
    outcome.status = stated.status;
    outcome.error = stated.error;
    return outcome;
  }
  // A worker ended by a signal after it wrote its result — while shutting down (a strategy's
  // destructor, the process's exit): the cell failed, and the figures of its run are kept.
  const bool wrote_result = exit.kind == CellExitKind::kSignaled && outcome.result;
  if (!wrote_result) outcome.result.reset();
  outcome.status = RunStatus::kFailed;
  // Its own message first, whole: the summary's error column and the log show the first line.
  if (const std::string refusal = WorkerRefusal(exit); !refusal.empty() && !outcome.result) {
    outcome.error = refusal + "\n(worker " + exit.Describe() +
                    ": the cell passed validation before the sweep and was refused in its worker)";
    return outcome;
  }
  outcome.error = exit.kind == CellExitKind::kSignaled && exit.signal == SIGKILL
                      ? DescribeKilledWorker(exit, last, oom_kills_before, KernelOomKills())
                      : "worker " + exit.Describe();
  if (wrote_result) {
    outcome.error += " after it wrote its result (status " +
                     std::string(results::RunStatusName(StatusOfResult(*outcome.result).status)) +
                     "), while shutting down; the run's figures are kept";
  }
  if (!exit.stderr_tail.empty()) outcome.error += "\n" + exit.stderr_tail;
  return outcome;
}

// A cell's estimate (a row of isolated_estimate.h's JSON), never computed in the runner itself
// (the meta device's kernels would stay installed in it): in a fork of the runner, or, once the
// runner has threads (it looked for a GPU), in a new `memsweep estimate` process reading the
// cell's file.
nlohmann::json EstimateRow(const experiment::Cell& cell, const estimate::EstimateTarget& target,
                           const std::string& self, const std::string& cell_file,
                           const std::string& stderr_path, double timeout_seconds,
                           const std::atomic<bool>* stop) {
  const auto stopped = [stop] { return stop != nullptr && stop->load(); };
  nlohmann::json row =
      ForkIsSafe() ? estimate::EstimateIsolated(cell, target, stderr_path, timeout_seconds, stopped)
                   : estimate::EstimateExecuted(self, cell_file, cell, target, stderr_path,
                                                timeout_seconds, stopped);
  std::error_code error;
  fs::remove(stderr_path, error);
  return row;
}

// A failed or timed-out cell carries no estimate: it has no figure to check one against, and its
// estimate meets the same failing plugin — or waits forever where a rank's hang ended the run at
// a collective's timeout, which the estimate's collectives do not have.
bool KeepsAnEstimate(RunStatus status) {
  return status != RunStatus::kTimeout && status != RunStatus::kFailed;
}

// The estimate of a CUDA ("cuda", "auto") cell, after its worker ended: for the device the worker
// took and the GPU it ran on (the compute capability its result records).
std::optional<nlohmann::json> EstimateAfter(const experiment::Cell& cell, const Outcome& outcome,
                                            const std::string& self, const std::string& cell_file,
                                            const std::string& stderr_path, double timeout_seconds,
                                            const std::atomic<bool>* stop) {
  if (!KeepsAnEstimate(outcome.status)) return std::nullopt;
  estimate::EstimateTarget target;
  if (outcome.result && outcome.result->contains("device")) {
    const std::string ran_on = TextIn(*outcome.result, "device", "device");
    target.auto_device = ran_on.rfind("cuda", 0) == 0 ? "cuda" : "cpu";
  }
  if (outcome.result) {
    const std::string cc = TextIn(*outcome.result, "environment", "compute_capability");
    if (const std::optional<int> value = estimate::ParseComputeCapability(cc)) {
      target.compute_capability = *value;
    }
  }
  return EstimateRow(cell, target, self, cell_file, stderr_path, timeout_seconds, stop);
}

// Why a cell whose estimate needs more host memory than there is was not started.
std::string HostShortError(const nlohmann::json& estimate) {
  return "not started: its workers need at least " +
         memory::FormatBytes(estimate.value("host_bytes", int64_t{0})) +
         " of host memory (the estimate's floor: processes, offloaded state, the CPU device's "
         "bytes; docs/estimate.md) and " +
         memory::FormatBytes(estimate.value("host_available_bytes", int64_t{0})) +
         " is available, so the kernel's OOM killer would end it. Run it where more memory is "
         "free, or with less offloaded state or fewer ranks; `memsweep run --no-estimate` starts "
         "it anyway";
}

// CPU cells may start as a fork of the runner; CUDA ones ("cuda", "auto") get a fresh process.
bool RunsOnTheCpu(const experiment::Cell& cell) {
  return cell.document["device"]["type"].value_or(std::string("cpu")) == "cpu";
}

std::unique_ptr<CellProcess> StartWorker(const experiment::Cell& cell, const WorkerFiles& files,
                                         const SweepOptions& options, const std::string& self,
                                         const std::string& stderr_path) {
  if (options.in_process_worker && RunsOnTheCpu(cell)) {
    if (ForkIsSafe()) {
      const auto& worker = options.in_process_worker;
      return std::make_unique<CellProcess>([&worker, &files] { return worker(files); },
                                           stderr_path);
    }
    spdlog::warn("the runner has started threads: {} starts as a new process", cell.Describe());
  }
  return std::make_unique<CellProcess>(WorkerArgv(files), stderr_path);
}

// The files of one cell's worker run, in the sweep's work folder.
struct CellPaths {
  // memory_snapshot: the allocation history the worker writes beside its result (stored in the
  // database, then deleted with the rest).
  fs::path cell, result, stderr_file, summary, memory_snapshot;
  CellPaths(const fs::path& work, const std::string& hash)
      : cell(work / (hash + ".toml")),
        result(work / (hash + ".json")),
        stderr_file(work / (hash + ".stderr")),
        summary(work / (hash + ".txt")),
        memory_snapshot(work / (hash + ".json.snapshot.pickle")) {}
};

void Count(SweepSummary& summary, RunStatus status) {
  switch (status) {
    case RunStatus::kOk: ++summary.ok; break;
    case RunStatus::kOom: ++summary.oom; break;
    case RunStatus::kTimeout: ++summary.timeout; break;
    default: ++summary.failed; break;
  }
}

// The names of a cell's kept files in the cell-files folder: <stem>.json and <stem>.txt.
std::string KeptStem(const experiment::Cell& cell) {
  return "cell" + std::to_string(cell.index) + "-" + cell.hash;
}

// A cell that runs again drops the files an earlier run of it kept: whatever it ends with, what
// stays in the folder is this run's, never an older run's `ok` beside a `failed` row.
void RemoveKeptFiles(const fs::path& keep, const experiment::Cell& cell) {
  for (const char* extension : {".json", ".txt"}) {
    std::error_code ignored;
    fs::remove(keep / (KeptStem(cell) + extension), ignored);
  }
}

// The status a summary table states on its first line ("memsweep run 'x': ok").
std::string StatusInSummary(const fs::path& summary) {
  std::ifstream in(summary);
  std::string first;
  std::getline(in, first);
  const size_t colon = first.rfind(": ");
  return colon == std::string::npos ? std::string() : first.substr(colon + 2);
}

// The cell's full result and summary stay beside the database for people to read; the worker's
// other files go. The summary always says the status the database records: a worker that left
// no result gets one of its status and error, and a result the runner judged otherwise (a worker
// that crashed after writing it) gets that verdict above the worker's table.
void KeepResultAndClearWork(const CellPaths& paths, const Outcome& outcome, const fs::path& keep,
                            const experiment::Cell& cell, const std::string& experiment) {
  const std::string stem = KeptStem(cell);
  const std::string status = results::RunStatusName(outcome.status);
  std::error_code error;
  fs::create_directories(keep, error);
  std::string worker_summary;
  if (outcome.result) {
    fs::rename(paths.result, keep / (stem + ".json"), error);
    if (fs::exists(paths.summary) && StatusInSummary(paths.summary) == status) {
      fs::rename(paths.summary, keep / (stem + ".txt"), error);
    } else if (fs::exists(paths.summary)) {
      std::ifstream in(paths.summary);
      std::stringstream text;
      text << in.rdbuf();
      worker_summary = "\nThe worker's own summary, from before that verdict:\n\n" + text.str();
    }
  }
  if (!fs::exists(keep / (stem + ".txt"))) {
    std::string text = "memsweep run '" + experiment + "', cell " + std::to_string(cell.index) +
                       " (" + cell.Describe() + "): " + status + "\n";
    if (!outcome.error.empty()) text += "  " + outcome.error + "\n";
    if (!outcome.result) {
      text += "\nThe worker left no result: no figures were recorded for this run.\n";
    }
    text += worker_summary;
    std::ofstream(keep / (stem + ".txt")) << text;
  }
  for (const fs::path* file : {&paths.cell, &paths.result, &paths.summary, &paths.stderr_file,
                               &paths.memory_snapshot}) {
    fs::remove(*file, error);
  }
}

// Removes the sweep's work folder however the sweep ends.
struct WorkFolder {
  fs::path path;
  ~WorkFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// "cells 2 to 5", "cell 5", or "" when none is left.
std::string CellRange(size_t first, size_t count) {
  if (first >= count) return "";
  if (first + 1 == count) return "cell " + std::to_string(first);
  return "cells " + std::to_string(first) + " to " + std::to_string(count - 1);
}

// What a database error in the middle of a sweep meant, to follow SQLite's message: the sweep
// stops (a cell whose result cannot be recorded is not worth running), what stays recorded, and
// how to go on.
std::string SweepStopped(const std::string& what_happened, const SweepSummary& summary,
                         size_t first_not_run, size_t cells) {
  const int64_t recorded =
      summary.skipped + summary.ok + summary.oom + summary.failed + summary.timeout;
  const std::string not_run = CellRange(first_not_run, cells);
  return "\nthe sweep stopped: " + what_happened + "; " + std::to_string(recorded) + " of the " +
         std::to_string(cells) + " cells are recorded" +
         (not_run.empty() ? std::string() : "; " + not_run + " did not run") +
         ".\nTo go on, make the database writable again (free disk space, check permissions and "
         "quota) or, if it is damaged, pass another --db; then run the same command: finished "
         "cells are skipped, the others run.";
}

}  // namespace

fs::path CellFilesDirectory(const std::string& db_path, const std::string& experiment) {
  const auto folder_name = [](std::string name, const char* fallback) {
    if (name.empty()) name = fallback;
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
    }
    return name;
  };
  // One folder per database (its file name without the extension), then per experiment: two
  // databases in one folder never share, or overwrite, each other's cell files.
  const fs::path db(db_path);
  return db.parent_path() / folder_name(db.stem().string(), "memsweep") /
         folder_name(experiment, "experiment");
}

SweepSummary RunSweep(const experiment::ExperimentPlan& plan, const SweepOptions& options) {
  // Errors here leave everything as it was: nothing has run.
  results::ResultsDb db(options.db_path, results::ResultsDb::Mode::kReadWrite);
  SweepSummary summary;
  summary.cells = static_cast<int64_t>(plan.cells.size());
  summary.experiment_id = db.EnsureExperiment(plan.name, plan.source, plan.file_text);
  std::vector<results::CellInfo> infos;
  for (const auto& cell : plan.cells) infos.push_back(InfoOf(cell));
  db.AddPendingRuns(summary.experiment_id, infos);

  const fs::path work = options.work_dir.empty()
                            ? fs::path(options.db_path).parent_path() / ".memsweep-work" /
                                  std::to_string(getpid())
                            : fs::path(options.work_dir);
  fs::create_directories(work);
  const WorkFolder remove_work_at_end{work};
  const std::string self = SelfExecutable();
  if (options.in_process_worker) {
    spdlog::info("cells on the CPU start as forks of this runner (--exec-workers: new processes)");
  }
  ProgressLine progress(
      options.progress_line ? ProgressLine::Mode::kTerminal : ProgressLine::Mode::kLog,
      summary.cells);

  for (size_t i = 0; i < plan.cells.size(); ++i) {
    const experiment::Cell& cell = plan.cells[i];
    if (options.stop != nullptr && options.stop->load()) {
      summary.interrupted = true;
      break;
    }
    // From here on a database error stops the sweep (SweepStopped): whatever was recorded stays
    // recorded (every write is one transaction), the cell it happened in and the ones after it
    // run on the next sweep.
    std::optional<int64_t> run_id;
    const CellPaths paths(work, cell.hash);
    try {
      const auto existing = db.FindRun(summary.experiment_id, cell.hash);
      if (!existing || ShouldRun(existing->status, options.rerun)) {
        fs::remove(paths.result);
        fs::remove(paths.memory_snapshot);
        std::ofstream(paths.cell) << experiment::CellToToml(cell);
        run_id = db.ClaimRun(summary.experiment_id, infos[i], getpid());
        RemoveKeptFiles(CellFilesDirectory(options.db_path, plan.name), cell);
      }
    } catch (const results::ResultsError& e) {
      progress.Clear();
      throw results::ResultsError(
          e, SweepStopped("cell " + std::to_string(cell.index) + " could not be started", summary,
                          i, plan.cells.size()));
    }
    if (!run_id) {
      ++summary.skipped;
      progress.CellDone(0.0, /*ran=*/false);
      continue;
    }
    const std::string label = cell.Describe();
    if (!options.progress_line) spdlog::info("[{}/{}] {}", i + 1, summary.cells, label);
    progress.CellStarted(static_cast<int64_t>(i), label);

    // Every cell is estimated before its worker starts, and not started when its workers would
    // need more host memory than is available (a CUDA cell's offloaded state is host memory
    // too). A CPU cell keeps that estimate; a CUDA cell's figures are estimated again after its
    // worker, for the GPU it ran on (EstimateAfter).
    // Ctrl-C while the cell is estimated or runs: the cell goes back to 'pending'.
    const auto give_back = [&] {
      try {
        db.ReturnToPending(*run_id);
      } catch (const results::ResultsError& e) {
        // Still 'running': the next sweep runs it again all the same.
        spdlog::warn("{} stays 'running' in the database: {}", label, e.what());
      }
      summary.interrupted = true;
    };
    const std::string estimate_stderr = paths.stderr_file.string() + ".estimate";
    std::optional<nlohmann::json> estimate;
    if (options.estimate) {
      estimate = EstimateRow(cell, estimate::EstimateTarget{}, self, paths.cell.string(),
                             estimate_stderr, options.cell_timeout_seconds, options.stop);
      if (options.stop != nullptr && options.stop->load()) {
        give_back();
        break;
      }
    }
    Outcome outcome;
    double seconds = 0;
    if (estimate && estimate->value("oom_before_run", false)) {
      // The device cannot hold the parameters (a matrix over cards): an oom, no worker started.
      outcome.status = RunStatus::kOom;
      outcome.error = estimate->value("message", std::string());
    } else if (estimate && estimate->value("host_short", false)) {
      outcome.status = RunStatus::kFailed;
      outcome.error = HostShortError(*estimate);
    } else {
      const WorkerFiles files{paths.cell.string(), plan.source, paths.result.string(),
                              paths.summary.string()};
      const int64_t oom_kills_before = KernelOomKills();
      const auto child = StartWorker(cell, files, options, self, paths.stderr_file.string());
      // The stop check runs every ~100 ms while the cell runs: the progress ticks with it.
      const CellExit exit = child->Wait(
          options.cell_timeout_seconds,
          [&progress](const std::string& line) { progress.WorkerLine(line); },
          [&options, &progress] {
            progress.Tick();
            return options.stop != nullptr && options.stop->load();
          });

      if (exit.kind == CellExitKind::kInterrupted) {
        give_back();
        break;
      }
      seconds = exit.seconds;
      outcome = Judge(exit, paths.result.string(), options.cell_timeout_seconds, progress.Last(),
                      oom_kills_before);
      if (options.estimate && !RunsOnTheCpu(cell)) {
        estimate = EstimateAfter(cell, outcome, self, paths.cell.string(), estimate_stderr,
                                 options.cell_timeout_seconds, options.stop);
      } else if (!KeepsAnEstimate(outcome.status)) {
        estimate.reset();  // the CPU cell's estimate from before its worker
      }
    }
    try {
      // What the database records is what the kept summary says (a result it refused: failed).
      const ResultStatus recorded =
          RecordOutcome(db, *run_id, outcome.status, outcome.error,
                        outcome.result ? &*outcome.result : nullptr,
                        estimate ? &*estimate : nullptr);
      outcome.status = recorded.status;
      outcome.error = recorded.error;
    } catch (const results::ResultsError& e) {
      progress.Clear();
      // The transaction rolled back: the cell keeps its claim ('running', no figures), or goes
      // back to 'pending' if the database still takes that; both run again on the next sweep.
      try {
        db.ReturnToPending(*run_id);
      } catch (const results::ResultsError&) {
      }
      const fs::path keep = CellFilesDirectory(options.db_path, plan.name);
      const std::string stem = KeptStem(cell);
      KeepResultAndClearWork(paths, outcome, keep, cell, plan.name);
      const std::string kept = outcome.result && fs::exists(keep / (stem + ".json"))
                                   ? " (its result is kept as " + (keep / stem).string() +
                                         ".json and .txt)"
                                   : "";
      throw results::ResultsError(
          e, SweepStopped("cell " + std::to_string(cell.index) + " ran (status " +
                              results::RunStatusName(outcome.status) +
                              ") but its outcome could not be recorded" + kept,
                          summary, i + 1, plan.cells.size()));
    }
    Count(summary, outcome.status);
    progress.CellDone(seconds, /*ran=*/true);
    const std::string status = results::RunStatusName(outcome.status);
    if (!options.progress_line || outcome.status != RunStatus::kOk) {
      progress.Clear();
      const std::string first_line = outcome.error.substr(0, outcome.error.find('\n'));
      spdlog::info("[{}/{}] {}{}{}", i + 1, summary.cells, status,
                   outcome.error.empty() ? "" : ": ", first_line);
    }
    if (outcome.result) {  // rows well short of seq_len: said under the cell's line
      const nlohmann::json& r = *outcome.result;
      const nlohmann::json run_summary = r.value("summary", nlohmann::json::object());
      const std::string short_rows = train::ShortRowsWarning(
          run_summary.value("row_length_mean", 0.0), run_summary.value("row_length_max", int64_t{0}),
          r.value("batches", nlohmann::json::object()).value("seq_len", int64_t{0}));
      if (!short_rows.empty()) {
        progress.Clear();
        spdlog::warn("[{}/{}] {}", i + 1, summary.cells, short_rows);
      }
    }
    KeepResultAndClearWork(paths, outcome, CellFilesDirectory(options.db_path, plan.name), cell,
                           plan.name);
  }
  progress.Clear();
  return summary;
}

}  // namespace memsweep::sweep
