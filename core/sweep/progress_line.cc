#include "core/sweep/progress_line.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/memory/byte_size.h"

namespace memsweep::sweep {
namespace {

std::string Duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buffer[32];
  if (s >= 3600) {
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buffer;
}

// "step 2/3 | 5120 tok/s | peak 14.44 MiB"
std::string StepFigures(const WorkerProgress& p) {
  char figures[128];
  std::snprintf(figures, sizeof figures, "step %lld/%lld | %.0f tok/s | peak %s",
                static_cast<long long>(p.step), static_cast<long long>(p.steps), p.tokens_per_s,
                memory::FormatBytes(p.peak_bytes).c_str());
  return figures;
}

}  // namespace

std::optional<WorkerProgress> ParseProgressLine(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  if (!(in >> word) || word != "progress") return std::nullopt;
  WorkerProgress progress;
  if (!(in >> progress.step >> progress.steps >> progress.tokens_per_s >> progress.peak_bytes)) {
    return std::nullopt;
  }
  int64_t rss = 0, host_pool = 0;
  if (in >> rss >> host_pool) {
    progress.peak_rss_bytes = rss;
    progress.host_pool_peak_bytes = host_pool;
  }
  return progress;
}

ProgressLine::ProgressLine(Mode mode, int64_t total_cells)
    : ProgressLine(mode, total_cells, Options{}) {}

ProgressLine::ProgressLine(Mode mode, int64_t total_cells, Options options)
    : mode_(mode), options_(std::move(options)), total_(total_cells) {
  if (!options_.log) options_.log = [](const std::string& line) { spdlog::info("{}", line); };
  if (!options_.clock) options_.clock = [] { return Clock::now(); };
}

void ProgressLine::CellStarted(int64_t index, const std::string& label) {
  index_ = index;
  label_ = label;
  last_.reset();
  cell_start_ = last_log_ = options_.clock();
  running_ = true;
  Draw();
}

void ProgressLine::WorkerLine(const std::string& line) {
  std::optional<WorkerProgress> progress = ParseProgressLine(line);
  if (!progress) return;
  last_ = progress;
  Draw();
}

void ProgressLine::Tick() {
  if (mode_ != Mode::kLog || !running_) return;
  const Clock::time_point now = options_.clock();
  if (std::chrono::duration<double>(now - last_log_).count() >= options_.log_every_seconds) {
    Log(now);
  }
}

void ProgressLine::Log(Clock::time_point now) {
  last_log_ = now;
  const double elapsed = std::chrono::duration<double>(now - cell_start_).count();
  std::string text = "[" + std::to_string(index_ + 1) + "/" + std::to_string(total_) + "] ";
  text += last_ ? StepFigures(*last_) : std::string("in its first step");
  options_.log(text + " | " + Duration(elapsed) + " so far");
}

void ProgressLine::CellDone(double seconds, bool ran) {
  running_ = false;
  ++done_;
  if (ran) {
    ++ran_;
    ran_seconds_ += seconds;
  }
  Draw();
}

void ProgressLine::Draw() {
  if (mode_ != Mode::kTerminal) return;
  std::ostringstream text;
  text << "cells " << done_ << "/" << total_;
  if (done_ < total_) {
    text << " | cell " << index_ + 1;
    if (last_ && last_->steps > 0) text << " " << StepFigures(*last_);
    if (ran_ > 0) {
      const double per_cell = ran_seconds_ / static_cast<double>(ran_);
      const double elapsed =
          std::chrono::duration<double>(options_.clock() - cell_start_).count();
      const double remaining =
          per_cell * static_cast<double>(total_ - done_) - std::min(elapsed, per_cell);
      text << " | ETA " << Duration(remaining > 0 ? remaining : 0);
    }
  }
  std::string shown = text.str();
  if (shown.size() > 118) shown.resize(118);
  std::fprintf(stderr, "\r\033[K%s", shown.c_str());
  std::fflush(stderr);
}

void ProgressLine::Clear() {
  if (mode_ != Mode::kTerminal) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace memsweep::sweep
