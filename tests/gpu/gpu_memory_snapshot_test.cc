// memsweep snapshot on a CUDA device: LibTorch's own allocation history
// (torch::cuda::_record_memory_history / _memory_snapshot_pickled), stored and written as for the
// CPU, read by Python's plain pickle and replayed. Its events carry the requested sizes while the
// run's peak counts the caching allocator's rounded blocks: the replayed peak is at most the
// recorded one and within 10% of it (a tiny cell's blocks round up by at most 511 bytes each, or
// keep an unsplit remainder under 1 MiB). No frames: memsweep asks LibTorch for no stacks.
// Skipped without a usable CUDA device.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/results/results_db.h"
#include "gpu/gpu_test_support.h"
#include "support/cli_runner.h"

namespace memsweep::testing_support {
namespace {

namespace fs = std::filesystem;

class GpuMemorySnapshot : public GpuTest {};

TEST_F(GpuMemorySnapshot, ACudaRunOpensInPlainPythonAndReplaysNearItsPeak) {
  const fs::path dir = FreshTempDir("gpu_snapshot");
  const fs::path file = dir / "snap.toml";
  std::ofstream(file) << "[experiment]\nname = \"snap\"\nsteps = 2\nwarmup_steps = 1\n"
                      << "memory_history = 1000000\n[data]\npath = \""
                      << SourcePath("experiments/data/devils-dictionary.jsonl")
                      << "\"\n[device]\ntype = \"cuda\"\n"
                      << "[strategies.batching]\nseq_len = 64\nmicro_batch_size = 2\n";
  const fs::path db = dir / "r.db";
  const Outcome run = RunMemsweep("run " + file.string() + " --db " + db.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const results::QueryResult rows =
      results::ResultsDb(db.string(), results::ResultsDb::Mode::kReadOnly)
          .Query("SELECT s.run_id, s.peak_allocated_bytes FROM run_summary AS s "
                 "JOIN memory_snapshots AS m ON m.run_id = s.run_id");
  ASSERT_EQ(rows.rows.size(), 1u) << run.output;
  const fs::path out = dir / "run.pickle";
  const Outcome snapshot = RunMemsweep("snapshot " + rows.rows[0][0].value_or("") + " --db " +
                                       db.string() + " -o " + out.string());
  ASSERT_EQ(snapshot.exit_code, 0) << snapshot.output;
  const std::string command = "python3 -S " + SourcePath("tests/tools/check_memory_snapshot.py") +
                              " " + out.string() + " " + rows.rows[0][1].value_or("0") +
                              " --below 0.1 --no-stage-frames 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  std::printf("%s", output.c_str());
}

}  // namespace
}  // namespace memsweep::testing_support
