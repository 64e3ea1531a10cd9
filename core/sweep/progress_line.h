// ProgressLine: the sweep's one-line progress display on a terminal — cells done/total, the
// current cell's step, its tokens/s and peak memory, and an ETA from the cells finished so far.
// Disabled (every call a no-op) when the output is not a terminal; log lines are used then.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace memsweep::sweep {

class ProgressLine {
 public:
  ProgressLine(bool enabled, int64_t total_cells);
  void CellStarted(int64_t index, const std::string& label);
  // A worker's stdout line: "progress STEP STEPS TOKENS_PER_S PEAK_BYTES".
  void WorkerLine(const std::string& line);
  void CellDone(double seconds, bool ran);
  void Clear();

 private:
  void Draw();

  bool enabled_;
  int64_t total_, done_ = 0, ran_ = 0, index_ = 0;
  double ran_seconds_ = 0.0;
  std::string label_;
  int64_t step_ = 0, steps_ = 0, peak_ = 0;
  double tokens_per_s_ = 0.0;
  std::chrono::steady_clock::time_point cell_start_;
};

}  // namespace memsweep::sweep
