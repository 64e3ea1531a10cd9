#include "core/sweep/progress_line.h"

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

}  // namespace

ProgressLine::ProgressLine(bool enabled, int64_t total_cells)
    : enabled_(enabled), total_(total_cells) {}

void ProgressLine::CellStarted(int64_t index, const std::string& label) {
  index_ = index;
  label_ = label;
  step_ = steps_ = peak_ = 0;
  tokens_per_s_ = 0.0;
  cell_start_ = std::chrono::steady_clock::now();
  Draw();
}

void ProgressLine::WorkerLine(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  if (!(in >> word) || word != "progress") return;
  in >> step_ >> steps_ >> tokens_per_s_ >> peak_;
  Draw();
}

void ProgressLine::CellDone(double seconds, bool ran) {
  ++done_;
  if (ran) {
    ++ran_;
    ran_seconds_ += seconds;
  }
  Draw();
}

void ProgressLine::Draw() {
  if (!enabled_) return;
  std::ostringstream text;
  text << "cells " << done_ << "/" << total_;
  if (done_ < total_) {
    text << " | cell " << index_ + 1;
    if (steps_ > 0) {
      char figures[96];
      std::snprintf(figures, sizeof figures, " step %lld/%lld | %.0f tok/s | peak %s",
                    static_cast<long long>(step_), static_cast<long long>(steps_), tokens_per_s_,
                    memory::FormatBytes(peak_).c_str());
      text << figures;
    }
    if (ran_ > 0) {
      const double per_cell = ran_seconds_ / static_cast<double>(ran_);
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - cell_start_).count();
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
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace memsweep::sweep
