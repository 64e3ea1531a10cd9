// optimizer/torch_adamw in a whole training step against transformers with torch.optim.AdamW
// (hf_peak_reference/make_references.py, run by ctest as
// TorchAdamWHfPeakReference.PeaksMatchTransformers): a small Qwen2 with an untied and a tied
// head, fp32 and bf16 autocast, each implementation, with the Trainer's parameter groups (the
// AdamW transformers' Trainer builds: decay names from Trainer.get_decay_parameter_names, then
// biases and norms without decay) and with one group — the run's peak, and the optimizer step's
// own peak (the optimizer_step stage against the profiler's optimizer.step() window), within 1%
// of the peaks torch.profiler measured for transformers' loop; the estimate of the fp32 runs too.
// The optimizer walks its tensors in Hugging Face's order (core/model/hf_parameter_order.h): the
// for-loop holds the previous tensor's denominator while it computes the next one's, so with an
// untied head the order decides what the step's peak holds beside the head's two temporaries.
// One known difference, outside this plugin, is held to its measured size: bf16 autocast —
// precision/bf16-autocast's run peaks 1.3-1.5 % below transformers' loop under torch.autocast,
// the same for every implementation (the peak is in forward/backward): held at 2 %. The
// optimizer steps are equal within 1 %.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/estimate/cell_estimate.h"
#include "support/run_configs.h"

namespace memsweep::torch_adamw_hf_peak_test {
namespace {

using testing_support::SourcePath;
using testing_support::Train;

// transformers' loop: no gradient clipping, a constant learning rate, the loss alone kept
// through backward (loss/full without keep_logits).
config::RunConfig TransformersLoopRun(const std::string& model_dir, const nlohmann::json& peaks,
                                      const std::string& grouping, const std::string& precision,
                                      const std::string& implementation) {
  const std::string text =
      "[experiment]\nname = \"torch-adamw-hf-peak\"\nsteps = " +
      std::to_string(peaks.at("steps").get<int64_t>()) +
      "\nwarmup_steps = 1\nseed = 1\n"
      "[model]\nconfig = \"" + model_dir + "\"\n"
      "[data]\npath = \"data/devils-dictionary.jsonl\"\n"
      "[optimizer]\nlr = " + std::to_string(peaks.at("lr").get<double>()) +
      "\nweight_decay = " + std::to_string(peaks.at("weight_decay").get<double>()) +
      "\ngrad_clip = 0.0\n"
      "[device]\nthreads = 1\n"
      "[strategies.batching]\nseq_len = " + std::to_string(peaks.at("tokens").get<int64_t>()) +
      "\nmicro_batch_size = " + std::to_string(peaks.at("rows").get<int64_t>()) +
      "\n[strategies.loss]\nplugin = \"full\"\nkeep_logits = false\n"
      "[strategies.precision]\nplugin = \"" + precision + "\"\n"
      "[strategies.optimizer]\nplugin = \"torch_adamw\"\nimplementation = \"" + implementation +
      "\"\nparam_groups = \"" + grouping + "\"\n";
  return config::ParseRunConfig(text, SourcePath("experiments/torch-adamw-hf-peak.toml"), {});
}

double Ratio(int64_t a, int64_t b) { return static_cast<double>(a) / static_cast<double>(b); }

TEST(TorchAdamWHfPeakReferenceTest, RunAndOptimizerStepPeaksEqualTransformers) {
  const char* dir = std::getenv("MEMSWEEP_TORCH_ADAMW_HF_PEAK_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "MEMSWEEP_TORCH_ADAMW_HF_PEAK_DIR is not set: ctest runs this test as "
                    "TorchAdamWHfPeakReference.PeaksMatchTransformers, with transformers' figures";
  }
  for (const std::string model : {"qwen2_untied", "qwen2_tied"}) {
    const std::string case_dir = std::string(dir) + "/" + model;
    std::ifstream in(case_dir + "/peaks.json");
    ASSERT_TRUE(in) << case_dir << "/peaks.json";
    const nlohmann::json peaks = nlohmann::json::parse(in);
    for (const std::string grouping : {"trainer", "single"}) {
      if (grouping == "single" && model == "qwen2_tied") continue;  // as the maker measures
      for (const std::string precision : {"fp32", "bf16-autocast"}) {
        if (precision != "fp32" && grouping != "trainer") continue;  // as the maker measures
        for (const std::string implementation : {"for-loop", "foreach", "fused"}) {
          const std::string what =
              model + " " + grouping + " " + precision + " " + implementation;
          const nlohmann::json& reference = peaks.at(grouping).at(precision).at(implementation);
          const int64_t ref_peak = reference.at("peak"), ref_step = reference.at("optimizer_step");
          const config::RunConfig cfg =
              TransformersLoopRun(case_dir, peaks, grouping, precision, implementation);
          const train::RunResult r = Train(cfg);
          ASSERT_EQ(r.status, train::RunStatus::kOk) << what << ": " << r.error;
          const int64_t peak = r.memory.peak_allocated_bytes;
          const int64_t step = r.memory.phases[2].peak_bytes;  // the optimizer_step stage's
          std::printf("%s: run peak %lld, transformers %lld (%.5f); optimizer step %lld, "
                      "transformers %lld (%.5f)\n",
                      what.c_str(), static_cast<long long>(peak), static_cast<long long>(ref_peak),
                      Ratio(peak, ref_peak), static_cast<long long>(step),
                      static_cast<long long>(ref_step), Ratio(step, ref_step));
          EXPECT_NEAR(Ratio(peak, ref_peak), 1.0, precision == "fp32" ? 0.01 : 0.02) << what;
          EXPECT_NEAR(Ratio(step, ref_step), 1.0, 0.01) << what;
          if (precision != "fp32") continue;
          const estimate::CellEstimate e = estimate::EstimateRun(cfg);
          ASSERT_EQ(e.status, estimate::EstimateStatus::kEstimated) << what << ": " << e.message;
          const int64_t e_peak = e.run.memory.peak_allocated_bytes;
          const int64_t e_step = e.run.memory.phases[2].peak_bytes;
          std::printf("%s: estimate %lld (%.5f), optimizer step %lld (%.5f)\n", what.c_str(),
                      static_cast<long long>(e_peak), Ratio(e_peak, ref_peak),
                      static_cast<long long>(e_step), Ratio(e_step, ref_step));
          EXPECT_NEAR(Ratio(e_peak, ref_peak), 1.0, 0.01) << what << " estimate";
          EXPECT_NEAR(Ratio(e_step, ref_step), 1.0, 0.01) << what << " estimate";
        }
      }
    }
  }
}

}  // namespace
}  // namespace memsweep::torch_adamw_hf_peak_test
