// loss/full's memory against transformers' own training step (tests/plugins/loss/full/
// hf_peak_reference/make_references.py, run by ctest as HfPeakReference.FullLossMatchesTransformers):
// for every model type memsweep reads, the run's peak equals the peak torch.profiler measures for
// transformers within 1% — keep_logits = true against the loop that keeps the model's outputs
// through backward, keep_logits = false against transformers' Trainer, which keeps only the loss,
// and checkpointing/full against the Trainer's loop with gradient checkpointing; and memsweep
// estimate's figure for the same run against the same peaks.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/estimate/cell_estimate.h"
#include "support/run_configs.h"

namespace memsweep::hf_peak_test {
namespace {

using testing_support::SourcePath;
using testing_support::Train;

config::RunConfig ReferenceRun(const std::string& model_dir, int64_t rows, int64_t tokens,
                               int64_t steps, bool keep_logits, bool checkpointing) {
  const std::string text =
      "[experiment]\nname = \"hf-peak\"\nsteps = " + std::to_string(steps) +
      "\nwarmup_steps = 1\nseed = 1\n"
      "[model]\nconfig = \"" + model_dir + "\"\n"
      "[data]\npath = \"data/devils-dictionary.jsonl\"\n"
      "[optimizer]\nlr = 1e-4\n"
      "[device]\nthreads = 1\n"
      "[strategies.batching]\nseq_len = " + std::to_string(tokens) +
      "\nmicro_batch_size = " + std::to_string(rows) +
      "\n[strategies.loss]\nplugin = \"full\"\nkeep_logits = " + (keep_logits ? "true" : "false") +
      "\n[strategies.checkpointing]\nplugin = \"" + (checkpointing ? "full" : "none") + "\"\n";
  return config::ParseRunConfig(text, SourcePath("experiments/hf-peak.toml"), {});
}

TEST(LossHfPeakReferenceTest, FullLossPeakEqualsTransformersForEveryModelType) {
  const char* dir = std::getenv("MEMSWEEP_HF_PEAK_REFERENCE_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "MEMSWEEP_HF_PEAK_REFERENCE_DIR is not set: ctest runs this test as "
                    "HfPeakReference.FullLossMatchesTransformers, with transformers' figures";
  }
  for (const std::string model_type : {"llama", "qwen2", "mistral", "phi3"}) {
    const std::string case_dir = std::string(dir) + "/" + model_type;
    std::ifstream in(case_dir + "/peaks.json");
    ASSERT_TRUE(in) << case_dir << "/peaks.json";
    const nlohmann::json peaks = nlohmann::json::parse(in);
    // transformers' three loops: the Trainer's, the tutorials' (outputs kept), the Trainer's
    // with gradient checkpointing (checkpointing/full: every decoder block recomputed).
    for (const std::string loop : {"trainer", "outputs_kept", "trainer_checkpointed"}) {
      const bool keep = loop == "outputs_kept";
      const bool checkpointing = loop == "trainer_checkpointed";
      const int64_t reference = peaks.at(loop).get<int64_t>();
      const auto run = [&] {
        return ReferenceRun(case_dir, peaks.at("rows"), peaks.at("tokens"), peaks.at("steps"),
                            keep, checkpointing);
      };
      const train::RunResult r = Train(run());
      const int64_t peak = r.memory.peak_allocated_bytes;
      const double ratio = static_cast<double>(peak) / static_cast<double>(reference);
      std::printf("%s %s: memsweep %lld, transformers %lld bytes (%.4f)\n", model_type.c_str(),
                  loop.c_str(), static_cast<long long>(peak), static_cast<long long>(reference),
                  ratio);
      EXPECT_NEAR(ratio, 1.0, 0.01) << model_type << " " << loop;
      // The estimate of the same run (memsweep estimate: the loop on the meta device) against
      // transformers' peak: the estimate is for the user's stack.
      const estimate::CellEstimate e = estimate::EstimateRun(run());
      ASSERT_EQ(e.status, estimate::EstimateStatus::kEstimated) << e.message;
      const double estimate_ratio = static_cast<double>(e.run.memory.peak_allocated_bytes) /
                                    static_cast<double>(reference);
      std::printf("%s %s: estimate %lld bytes (%.4f of transformers')\n", model_type.c_str(),
                  loop.c_str(), static_cast<long long>(e.run.memory.peak_allocated_bytes),
                  estimate_ratio);
      EXPECT_NEAR(estimate_ratio, 1.0, 0.01) << model_type << " " << loop;
    }
  }
}

}  // namespace
}  // namespace memsweep::hf_peak_test
