// The sweep's progress where stderr is no terminal (a pipe, a file, CI): a log line at least
// every log_every_seconds while a cell runs, so that a long cell is not silence; and the worker's
// progress lines, old and new, as the runner reads them.
#include "core/sweep/progress_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace memsweep::sweep {
namespace {

using Clock = ProgressLine::Clock;

struct FakeLog {
  Clock::time_point now = Clock::time_point() + std::chrono::hours(1);
  std::vector<std::string> lines;
  ProgressLine::Options Options(double every) {
    ProgressLine::Options options;
    options.log_every_seconds = every;
    options.log = [this](const std::string& line) { lines.push_back(line); };
    options.clock = [this] { return now; };
    return options;
  }
  void Advance(double seconds) {
    now += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
};

TEST(ProgressLineTest, OffATerminalALongCellLogsALinePerInterval) {
  FakeLog log;
  ProgressLine progress(ProgressLine::Mode::kLog, 4, log.Options(10.0));
  progress.CellStarted(1, "cell 1 ...");
  log.Advance(5);
  progress.Tick();
  EXPECT_TRUE(log.lines.empty());
  log.Advance(5);
  progress.Tick();
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_EQ(log.lines[0], "[2/4] in its first step | 0m10s so far");
  progress.WorkerLine("progress 2 3 5120.0 15138816 402653184 0");
  progress.WorkerLine("some other line");
  log.Advance(9);
  progress.Tick();
  EXPECT_EQ(log.lines.size(), 1u);
  log.Advance(1);
  progress.Tick();
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_EQ(log.lines[1], "[2/4] step 2/3 | 5120 tok/s | peak 14.44 MiB | 0m20s so far");
  progress.CellDone(21, /*ran=*/true);
  log.Advance(100);
  progress.Tick();
  EXPECT_EQ(log.lines.size(), 2u);  // between cells: nothing
  // The next cell starts its own count, without the last cell's figures.
  progress.CellStarted(2, "cell 2 ...");
  EXPECT_FALSE(progress.Last().has_value());
  log.Advance(10);
  progress.Tick();
  ASSERT_EQ(log.lines.size(), 3u);
  EXPECT_EQ(log.lines[2], "[3/4] in its first step | 0m10s so far");
}

TEST(ProgressLineTest, OnATerminalNothingIsLogged) {
  FakeLog log;
  ProgressLine progress(ProgressLine::Mode::kTerminal, 1, log.Options(1.0));
  progress.CellStarted(0, "cell 0");
  log.Advance(30);
  progress.Tick();
  progress.Clear();
  EXPECT_TRUE(log.lines.empty());
}

TEST(ProgressLineTest, ReadsTheWorkersHostFiguresWhenTheLineHasThem) {
  const std::optional<WorkerProgress> full =
      ParseProgressLine("progress 2 3 5120.0 15138816 402653184 1048576");
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->step, 2);
  EXPECT_EQ(full->steps, 3);
  EXPECT_EQ(full->tokens_per_s, 5120.0);
  EXPECT_EQ(full->peak_bytes, 15138816);
  EXPECT_EQ(full->peak_rss_bytes, 402653184);
  EXPECT_EQ(full->host_pool_peak_bytes, 1048576);
  const std::optional<WorkerProgress> old = ParseProgressLine("progress 1 3 100.0 2048");
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->peak_bytes, 2048);
  EXPECT_EQ(old->peak_rss_bytes, -1);
  EXPECT_EQ(old->host_pool_peak_bytes, -1);
  EXPECT_FALSE(ParseProgressLine("progress").has_value());
  EXPECT_FALSE(ParseProgressLine("[12:00:00] info hello").has_value());
}

}  // namespace
}  // namespace memsweep::sweep
