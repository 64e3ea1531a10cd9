// How loss verification judges LoRA cells (docs/results.md, "What each plugin promises"): two
// LoRA runs that differ only in checkpointing are equivalent (`pass`), and full fine-tuning
// against LoRA is not math-preserving, the reason naming the adapter — through `memsweep run` and
// `memsweep compare`, as a user sees it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/cli_runner.h"
#include "support/results_db_fixtures.h"
#include "support/run_configs.h"

namespace {

using memsweep::testing_support::FreshDbPath;
using memsweep::testing_support::FreshTempDir;
using memsweep::testing_support::RunMemsweep;
using memsweep::testing_support::SourcePath;

// The row of `cell` in compare's CSV.
std::string Row(const std::string& csv, int cell) {
  const std::string head = "\r\n" + std::to_string(cell) + ",";
  const size_t start = csv.find(head);
  if (start == std::string::npos) return "";
  return csv.substr(start + 2, csv.find("\r\n", start + 2) - start - 2);
}

TEST(LoraVerificationTest, CheckpointingIsEquivalentAndFullFineTuningIsAnotherTraining) {
  const std::filesystem::path dir = FreshTempDir("lora_verification");
  const std::string file = (dir / "lora.toml").string();
  std::ofstream(file) << "[experiment]\nname = \"lora-verification\"\nsteps = 4\nwarmup_steps = 1\n"
                         "seed = 7\n[model]\npreset = \"tiny\"\n[data]\npath = \""
                      << SourcePath("experiments/data/devils-dictionary.jsonl")
                      << "\"\n[optimizer]\nlr = 3e-3\n[device]\nthreads = 2\n"
                         "[strategies.batching]\nseq_len = 64\nmicro_batch_size = 4\n"
                         "padding = \"max_length\"\n"
                         "[strategies.adapter]\nplugin = \"lora\"\n"
                         "[matrix]\n\"strategies.adapter.plugin\" = [\"lora\", \"none\"]\n"
                         "\"strategies.checkpointing.plugin\" = [\"none\", \"full\"]\n";
  const std::string db = FreshDbPath();
  auto out = RunMemsweep("run " + file + " --db " + db);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  out = RunMemsweep("compare --db " + db + " --format csv");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  // Cell 0: lora, none (the baseline); 1: lora, full; 2: none, none; 3: none, full.
  EXPECT_NE(Row(out.output, 1).find(",pass,equivalent,"), std::string::npos) << out.output;
  const std::string full = Row(out.output, 2);
  EXPECT_NE(full.find(",not math-preserving,"), std::string::npos) << out.output;
  EXPECT_NE(full.find("adapter: lora -> none"), std::string::npos)
      << out.output;
}

}  // namespace
