// The estimate of a cell of several ranks (docs/estimate.md, "Several ranks") against the same
// cell run by `memsweep run`: each rank's peak allocated bytes and offloaded state, from the
// estimate's `ranks` (memsweep estimate --format json) and the run's run_ranks rows; the host
// memory the workers need against what their resident sets measured; and the
// run's own stored estimate (rank 0's, as run_metrics keeps rank 0's figures). On the CPU the
// estimate's collectives take Gloo's buffers as the real ones do, so the figures agree to the
// byte here; the test holds 1 % so that a LibTorch kernel's scratch buffer cannot break it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "core/results/results_db.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace memsweep::testing_support {
namespace {

namespace fs = std::filesystem;

double RelativeToMeasured(int64_t estimated, int64_t measured) {
  return std::abs(static_cast<double>(estimated - measured)) / static_cast<double>(measured);
}

// Two ranks of the tiny preset: every sharding, fp32 and bf16, and ZeRO-2 / ZeRO-3 with their
// optimizer state offloaded to the host pool.
fs::path WriteRanksExperiment(const fs::path& dir) {
  const fs::path file = dir / "ranks.toml";
  std::ofstream(file)
      << "[experiment]\nname = \"ranks\"\nsteps = 2\nwarmup_steps = 1\nseed = 7\n"
      << "[model]\npreset = \"tiny\"\n"
      << "[data]\npath = \"" << SourcePath("experiments/data/devils-dictionary.jsonl") << "\"\n"
      << "[device]\nthreads = 1\nworld_size = 2\nmemory_budget = \"64MiB\"\n"
      << "[strategies.batching]\nseq_len = 48\nmicro_batch_size = 2\naccumulation_steps = 1\n"
      << "[matrix]\n\"strategies.sharding\" = [{plugin = \"ddp\"}, {plugin = \"zero1\"}, "
      << "{plugin = \"zero2\"}, {plugin = \"zero3\"}, "
      << "{plugin = \"zero2\", offload_optimizer = \"cpu\"}, "
      << "{plugin = \"zero3\", offload_optimizer = \"cpu\"}]\n"
      << "\"strategies.precision.plugin\" = [\"fp32\", \"bf16\"]\n";
  return file;
}

TEST(EstimateRanksTest, EveryRankFollowsItsMeasuredRun) {
  const fs::path dir = FreshTempDir("estimate-ranks");
  const fs::path file = WriteRanksExperiment(dir);
  const fs::path db_path = dir / "ranks.db";
  const Outcome run = RunMemsweep("run " + file.string() + " --db " + db_path.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Outcome est = RunMemsweep("estimate " + file.string() + " --format json");
  ASSERT_EQ(est.exit_code, 0) << est.output;
  const nlohmann::json estimates = nlohmann::json::parse(est.output.substr(est.output.find('{')));

  results::ResultsDb db(db_path.string(), results::ResultsDb::Mode::kReadOnly);
  // Per cell, the workers' measured peak resident sets summed over ranks.
  std::map<int, int64_t> measured_rss;
  for (const auto& row : db.Query("SELECT r.cell_index, SUM(k.peak_rss_bytes) FROM run_ranks k "
                                  "JOIN runs r ON r.id = k.run_id GROUP BY r.cell_index")
                             .rows) {
    measured_rss[std::stoi(*row[0])] = std::stoll(*row[1]);
  }
  // (cell, rank) -> measured peak allocated, host pool peak.
  std::map<std::pair<int, int>, std::pair<int64_t, int64_t>> measured;
  for (const auto& row :
       db.Query("SELECT r.cell_index, k.rank, k.peak_allocated_bytes, k.host_pool_peak_bytes "
                "FROM run_ranks k JOIN runs r ON r.id = k.run_id WHERE k.status = 'ok'")
           .rows) {
    measured[{std::stoi(*row[0]), std::stoi(*row[1])}] = {std::stoll(*row[2]),
                                                          std::stoll(*row[3])};
  }
  ASSERT_EQ(measured.size(), 24u) << run.output;

  int compared = 0;
  for (const nlohmann::json& cell : estimates["cells"]) {
    const int index = cell["cell"].get<int>();
    ASSERT_EQ(cell["status"], "fits") << cell.dump();
    ASSERT_EQ(cell["world_size"], 2) << cell.dump();
    ASSERT_EQ(cell["ranks"].size(), 2u);
    // Host memory: the ranks' device bytes (a CPU cell's are host memory) and offloaded state,
    // plus a process each; a floor under what the workers' resident sets measured.
    int64_t tensors = 0;
    for (const nlohmann::json& rank : cell["ranks"]) {
      tensors += rank["peak_reserved_bytes"].get<int64_t>() +
                 rank["host_pool_peak_bytes"].get<int64_t>();
    }
    const int64_t host = cell["host_bytes"].get<int64_t>();
    EXPECT_GT(host, tensors) << "cell " << index;
    EXPECT_LE(host, measured_rss.at(index)) << "cell " << index;
    EXPECT_GT(cell["host_available_bytes"].get<int64_t>(), 0);
    EXPECT_FALSE(cell["host_short"].get<bool>()) << "cell " << index;
    for (const nlohmann::json& rank : cell["ranks"]) {
      const auto [peak, host_pool] = measured.at({index, rank["rank"].get<int>()});
      const int64_t estimated = rank["peak_allocated_bytes"].get<int64_t>();
      EXPECT_LE(RelativeToMeasured(estimated, peak), 0.01)
          << "cell " << index << " (" << cell["label"] << ") rank " << rank["rank"]
          << ": estimated " << estimated << ", measured " << peak;
      EXPECT_EQ(rank["host_pool_peak_bytes"].get<int64_t>(), host_pool)
          << "cell " << index << " (" << cell["label"] << ") rank " << rank["rank"];
      ++compared;
    }
  }
  EXPECT_EQ(compared, 24);

  // The run stored each cell's estimate: rank 0's, against rank 0's measurement.
  const results::QueryResult stored = db.Query(
      "SELECT cell_index, estimate_status, estimate_error FROM run_summary ORDER BY cell_index");
  ASSERT_EQ(stored.rows.size(), 12u);
  for (const auto& row : stored.rows) {
    EXPECT_EQ(*row[1], "fits") << "cell " << *row[0];
    ASSERT_TRUE(row[2].has_value()) << "cell " << *row[0];
    EXPECT_LE(std::abs(std::stod(*row[2])), 0.01) << "cell " << *row[0];
  }
}

}  // namespace
}  // namespace memsweep::testing_support
