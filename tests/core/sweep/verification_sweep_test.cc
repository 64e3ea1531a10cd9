// Loss-equivalence verification in a real sweep of the tiny model (4 steps, 1 thread): against
// the fp32 reference cell, full checkpointing is bitwise equal, micro-batch 1 x accumulation 4
// matches 4 x 1 within 1e-5, bf16 autocast is reported as not math-preserving, a different lr as
// a configuration difference, and a plugin that falsely claims to be math-preserving fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/results/loss_verification.h"
#include "core/results/results_db.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace memsweep::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_support::RunMemsweep;
using testing_support::SourcePath;

// One [[matrix.include]] per cell: each is its own combination with only its own keys, so the
// reference selector names exactly the first.
std::string VerificationExperiment() {
  return std::string("[experiment]\nname = \"verify\"\nsteps = 4\nwarmup_steps = 1\nseed = 11\n") +
         "reference = \"strategies.checkpointing.plugin=none\"\n"
         "[data]\npath = \"" + SourcePath("experiments/data/devils-dictionary.jsonl") + "\"\n" +
         "[optimizer]\nlr = 3e-3\nlr_warmup_steps = 1\n"
         "[device]\nthreads = 1\n"
         "[plugins]\npaths = [\"" + MEMSWEEP_FIXTURE_DIR + "/drift\"]\n" +
         "[strategies.batching]\nseq_len = 32\nmicro_batch_size = 4\naccumulation_steps = 1\n"
         "[[matrix.include]]\n\"strategies.checkpointing.plugin\" = \"none\"\n"
         "[[matrix.include]]\n\"strategies.checkpointing.plugin\" = \"full\"\n"
         "[[matrix.include]]\n\"strategies.batching.micro_batch_size\" = 1\n"
         "\"strategies.batching.accumulation_steps\" = 4\n"
         "[[matrix.include]]\n\"strategies.precision.plugin\" = \"bf16-autocast\"\n"
         "[[matrix.include]]\n\"optimizer.lr\" = 1e-3\n"
         "[[matrix.include]]\n"
         "\"strategies.callbacks\" = [{plugin = \"fixture-drift\", scale = 0.01, at_step = 0}]\n";
}

const json& Cell(const json& comparison, int index) {
  for (const json& cell : comparison["cells"]) {
    if (cell["cell"] == index) return cell;
  }
  static const json kMissing;
  ADD_FAILURE() << "no cell " << index;
  return kMissing;
}

TEST(VerificationSweepTest, VerdictsOfARealSweep) {
  const fs::path dir = testing_support::FreshTempDir("verification_sweep");
  const fs::path file = dir / "verify.toml";
  std::ofstream(file) << VerificationExperiment();
  const std::string db = (dir / "r.db").string();

  const auto run = RunMemsweep("run " + file.string() + " --db " + db);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("verdict"), std::string::npos) << run.output;

  const auto compare = RunMemsweep("compare --db " + db + " --format json");
  ASSERT_EQ(compare.exit_code, 0) << compare.output;
  const json out = json::parse(compare.output);
  EXPECT_EQ(out["verification"]["against"], "reference");
  EXPECT_EQ(out["verification"]["cell"], 0);
  ASSERT_EQ(out["cells"].size(), 6u) << compare.output;

  EXPECT_EQ(Cell(out, 0)["verdict"], "reference");

  const json& full = Cell(out, 1);  // checkpointing: bitwise equal
  EXPECT_EQ(full["verdict"], "pass") << full.dump();
  EXPECT_EQ(full["expected"], "equivalent");
  EXPECT_EQ(full["max_abs_deviation"], 0.0) << full.dump();
  EXPECT_EQ(full["verdict_reason"], "checkpointing: none -> full");

  const json& accumulation = Cell(out, 2);  // 1 x 4 vs 4 x 1: summation order only
  EXPECT_EQ(accumulation["verdict"], "pass") << accumulation.dump();
  EXPECT_EQ(accumulation["compute_dtype"], "float32");
  // The verdict's own criterion (the product's fp32 equivalence tolerance), not a test's.
  EXPECT_LE(accumulation["max_rel_deviation"].get<double>(),
            results::EquivalentTolerance("float32").value())
      << accumulation.dump();
  EXPECT_NE(accumulation["verdict_reason"].get<std::string>().find("accumulation_steps 1 -> 4"),
            std::string::npos);

  const json& bf16 = Cell(out, 3);
  EXPECT_TRUE(bf16["verdict"] == "close" || bf16["verdict"] == "differs") << bf16.dump();
  EXPECT_EQ(bf16["expected"], "not math-preserving");
  EXPECT_EQ(bf16["compute_dtype"], "bfloat16");
  EXPECT_GT(bf16["max_rel_deviation"].get<double>(), 0.0) << bf16.dump();
  EXPECT_EQ(bf16["verdict_reason"], "precision: fp32 -> bf16-autocast (not math-preserving)");

  const json& lr = Cell(out, 4);
  EXPECT_EQ(lr["verdict"], "differs") << lr.dump();
  EXPECT_EQ(lr["expected"], "config differs");
  EXPECT_EQ(lr["verdict_reason"], "not a strategy change: optimizer.lr: 0.003 -> 0.001");

  const json& drift = Cell(out, 5);  // claims math-preserving, changes the weights after step 0
  EXPECT_EQ(drift["verdict"], "fail") << drift.dump();
  EXPECT_EQ(drift["expected"], "equivalent");
  EXPECT_GT(drift["max_rel_deviation"].get<double>(),
            results::EquivalentTolerance("float32").value());
  EXPECT_GE(drift["max_deviation_step"].get<int64_t>(), 1);  // step 0 ran before the change
  EXPECT_EQ(drift["verdict_reason"], "callbacks: (none) -> fixture-drift");

  // The figures the verdicts rest on are the stored losses: check one against step_metrics.
  results::ResultsDb reader(db, results::ResultsDb::Mode::kReadOnly);
  const results::QueryResult rows = reader.Query(
      "SELECT max(abs(s.loss - ref.loss)) FROM runs r JOIN step_metrics s ON s.run_id = r.id "
      "JOIN runs rr ON rr.cell_index = 0 JOIN step_metrics ref ON ref.run_id = rr.id "
      "AND ref.step = s.step WHERE r.cell_index = 5");
  ASSERT_TRUE(rows.rows.at(0).at(0));
  EXPECT_DOUBLE_EQ(std::strtod(rows.rows[0][0]->c_str(), nullptr),
                   drift["max_abs_deviation"].get<double>());

  // Resuming the finished sweep leaves every verdict as it was.
  const auto resumed = RunMemsweep("run " + file.string() + " --db " + db);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto again = RunMemsweep("compare --db " + db + " --format json");
  EXPECT_EQ(json::parse(again.output)["cells"], out["cells"]);

  // Another reference given on the command line re-judges the stored runs without running them.
  const auto rejudged = RunMemsweep("run " + file.string() + " --db " + db +
                                    " --set experiment.reference=strategies.checkpointing.plugin=full");
  EXPECT_EQ(rejudged.exit_code, 0) << rejudged.output;
  EXPECT_NE(rejudged.output.find("6 already done"), std::string::npos) << rejudged.output;
  const json against_full = json::parse(RunMemsweep("compare --db " + db + " --format json").output);
  EXPECT_EQ(against_full["verification"]["cell"], 1);
  EXPECT_EQ(Cell(against_full, 0)["verdict"], "pass");
  EXPECT_EQ(Cell(against_full, 0)["verdict_reason"], "checkpointing: full -> none");

  // For the record: how far bf16 autocast drifts from fp32 here.
  std::cout << "bf16-autocast vs fp32, tiny preset, 4 steps: max relative loss deviation "
            << bf16["max_rel_deviation"] << " at step " << bf16["max_deviation_step"]
            << "; micro-batch 1 x 4 vs 4 x 1: " << accumulation["max_rel_deviation"] << "\n";
}

}  // namespace
}  // namespace memsweep::sweep
