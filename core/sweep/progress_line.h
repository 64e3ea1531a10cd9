// ProgressLine: the sweep's progress while cells run. On a terminal, one line redrawn in place —
// cells done/total, the current cell's step, its tokens/s and peak memory, and an ETA from the
// cells finished so far. Elsewhere (a pipe, a file, CI), a log line per `log_every_seconds` while
// a cell runs, so that a long cell is not silence: the step it reached, tokens/s, peak and time
// so far, or that it is still in its first step.
//
//   ProgressLine progress(isatty(STDERR_FILENO) ? ProgressLine::Mode::kTerminal
//                                               : ProgressLine::Mode::kLog, cells);
//   progress.CellStarted(0, "cell 0 ...");
//   progress.WorkerLine("progress 1 3 5120.0 15138816 402653184 0");  // from the worker
//   progress.Tick();  // often while the cell runs
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace memsweep::sweep {

// What a worker's progress line says: "progress STEP STEPS TOKENS_PER_S PEAK_BYTES RSS_BYTES
// HOST_POOL_BYTES" (STEP counted from 1; RSS_BYTES the worker's peak resident set,
// HOST_POOL_BYTES the host pool's peak so far; a line without the last two leaves them -1).
struct WorkerProgress {
  int64_t step = 0, steps = 0;
  double tokens_per_s = 0.0;
  int64_t peak_bytes = 0;
  int64_t peak_rss_bytes = -1;
  int64_t host_pool_peak_bytes = -1;
};
std::optional<WorkerProgress> ParseProgressLine(const std::string& line);

class ProgressLine {
 public:
  enum class Mode : uint8_t { kTerminal, kLog };
  using Clock = std::chrono::steady_clock;
  struct Options {
    double log_every_seconds = 10.0;  // kLog: the most one cell stays silent
    std::function<void(const std::string&)> log;  // kLog: where lines go (default spdlog::info)
    std::function<Clock::time_point()> clock;     // default Clock::now (tests set their own)
  };
  ProgressLine(Mode mode, int64_t total_cells);
  ProgressLine(Mode mode, int64_t total_cells, Options options);
  void CellStarted(int64_t index, const std::string& label);
  // A worker's stdout line; lines other than progress lines are ignored.
  void WorkerLine(const std::string& line);
  // Called often while a cell runs: kLog writes a line when log_every_seconds have passed
  // since the cell started or since its last line.
  void Tick();
  void CellDone(double seconds, bool ran);
  void Clear();
  // The current cell's last progress line, if it wrote one.
  const std::optional<WorkerProgress>& Last() const { return last_; }

 private:
  void Draw();
  void Log(Clock::time_point now);

  Mode mode_;
  Options options_;
  int64_t total_, done_ = 0, ran_ = 0, index_ = 0;
  double ran_seconds_ = 0.0;
  std::string label_;
  std::optional<WorkerProgress> last_;
  Clock::time_point cell_start_, last_log_;
  bool running_ = false;
};

}  // namespace memsweep::sweep
