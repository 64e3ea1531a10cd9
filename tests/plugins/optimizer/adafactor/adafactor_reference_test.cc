// optimizer/adafactor against transformers' Adafactor (tests/plugins/optimizer/adafactor/
// reference/make_references.py; ctest runs these as AdafactorReference.*, with the references in
// MEMSWEEP_ADAFACTOR_REFERENCE_DIR):
// - steps: the same tensors (1-D, 2-D, 3-D, fp32 and bf16) with the same gradients, six steps of
//   each case — the class's defaults, the Trainer's settings, beta1 with weight decay either
//   way, warmup_init, bf16 — leave every tensor and every state tensor bitwise equal to
//   transformers' after every step, and each step's peak (the tensors, gradients, state and
//   temporaries) equals torch.profiler's within 1%;
// - training: a Qwen2 model (untied and tied head, fp32 and bf16 autocast) trained with the
//   Adafactor transformers' Trainer builds: the optimizer step's own peak equals the profiler's
//   within 1%, and so does the run's — under bf16 autocast once the fp32 attention
//   probabilities transformers' eager attention keeps and attention/eager does not are added
//   (TransformersFp32SoftmaxBytes).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/memory/tracking_allocator.h"
#include "optimizer/adafactor/adafactor.h"
#include "support/run_configs.h"

namespace memsweep::adafactor_reference_test {
namespace {

using plugins::optimizer::Adafactor;
using plugins::optimizer::AdafactorGroups;
using plugins::optimizer::AdafactorOptions;
using plugins::optimizer::AdafactorTensorState;

const char* ReferenceDir() { return std::getenv("MEMSWEEP_ADAFACTOR_REFERENCE_DIR"); }

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return in ? nlohmann::json::parse(in) : nlohmann::json::object();
}

// A tensor from the maker's raw bytes (little-endian, contiguous).
at::Tensor ReadTensor(const std::string& path, const std::vector<int64_t>& shape,
                      at::ScalarType dtype) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const at::Tensor t = at::empty(shape, at::TensorOptions().dtype(dtype));
  EXPECT_EQ(bytes.size(), t.nbytes()) << path;
  if (bytes.size() == t.nbytes()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

void ExpectBitwise(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  ASSERT_EQ(actual.scalar_type(), expected.scalar_type()) << what;
  EXPECT_TRUE(at::equal(actual, expected))
      << what << ": max |difference| "
      << (actual.to(at::kDouble) - expected.to(at::kDouble)).abs().max().item<double>();
}

const at::Tensor& StateTensor(const AdafactorTensorState& s, const std::string& name) {
  if (name == "exp_avg") return s.exp_avg;
  if (name == "exp_avg_sq_row") return s.exp_avg_sq_row;
  if (name == "exp_avg_sq_col") return s.exp_avg_sq_col;
  if (name == "exp_avg_sq") return s.exp_avg_sq;
  return s.rms;  // "RMS"
}

TEST(AdafactorReferenceTest, StepsEqualTransformersBitForBitAndInPeak) {
  if (ReferenceDir() == nullptr) {
    GTEST_SKIP() << "MEMSWEEP_ADAFACTOR_REFERENCE_DIR is not set: ctest runs this test as "
                    "AdafactorReference.StepsMatchTransformers, with transformers' results";
  }
  memory::TrackingAllocator& tracker = memory::TrackingAllocator::Instance();
  for (const std::string name : {"defaults", "trainer", "beta1_decay", "trainer_beta1_decay",
                                 "warmup_init", "bf16"}) {
    SCOPED_TRACE(name);
    const std::string dir = std::string(ReferenceDir()) + "/steps/" + name + "/";
    const nlohmann::json c = ReadJson(dir + "case.json");
    ASSERT_FALSE(c.empty());
    const at::ScalarType dtype = c.at("dtype") == "bfloat16" ? at::kBFloat16 : at::kFloat;
    const auto shapes = c.at("shapes").get<std::vector<std::vector<int64_t>>>();
    const int64_t steps = c.at("steps");
    AdafactorOptions options;
    options.first_moment = c.contains("beta1");
    options.relative_step = c.value("relative_step", true);
    options.scale_parameter = c.value("scale_parameter", true);
    options.warmup_init = c.value("warmup_init", false);
    options.groups = c.at("trainer_groups") ? AdafactorGroups::kTrainer : AdafactorGroups::kSingle;
    OptimizerStepSpec spec;
    spec.lr = c.value("lr", 0.0);  // unused with relative_step
    spec.beta1 = c.value("beta1", 0.0);
    spec.weight_decay = c.at("weight_decay");

    // Everything read before the baseline: what is measured is what transformers' run creates.
    std::vector<at::Tensor> inits;
    std::vector<std::vector<at::Tensor>> grads(steps), expected(steps);
    for (size_t k = 0; k < shapes.size(); ++k) {
      inits.push_back(ReadTensor(dir + "init_" + std::to_string(k) + ".bin", shapes[k], dtype));
      for (int64_t s = 0; s < steps; ++s) {
        const std::string suffix = std::to_string(s + 1) + "_" + std::to_string(k) + ".bin";
        grads[s].push_back(ReadTensor(dir + "grad_" + suffix, shapes[k], dtype));
        expected[s].push_back(ReadTensor(dir + "param_" + suffix, shapes[k], dtype));
      }
    }
    const std::vector<int64_t> reference_peaks = c.at("step_peaks").get<std::vector<int64_t>>();
    const int64_t baseline = tracker.AllocatedBytes();
    std::vector<at::Tensor> params;
    for (const at::Tensor& t : inits) params.push_back(t.clone().set_requires_grad(true));
    Adafactor optimizer(params, options);
    for (int64_t s = 0; s < steps; ++s) {
      for (size_t k = 0; k < params.size(); ++k) params[k].mutable_grad() = grads[s][k].clone();
      tracker.ResetWindowPeak();
      spec.step = s + 1;
      optimizer.Step(spec);
      const int64_t peak = tracker.WindowPeakBytes() - baseline;
      for (size_t k = 0; k < params.size(); ++k) {
        ExpectBitwise(params[k].detach(), expected[s][k],
                      "step " + std::to_string(s + 1) + " tensor " + std::to_string(k));
        params[k].mutable_grad() = at::Tensor();
      }
      const double ratio = static_cast<double>(peak) / static_cast<double>(reference_peaks[s]);
      std::printf("%s step %lld: peak %lld bytes, transformers %lld (%.4f)\n", name.c_str(),
                  static_cast<long long>(s + 1), static_cast<long long>(peak),
                  static_cast<long long>(reference_peaks[s]), ratio);
      EXPECT_NEAR(ratio, 1.0, 0.01) << "step " << s + 1;
    }
    for (size_t k = 0; k < shapes.size(); ++k) {
      const AdafactorTensorState& s = optimizer.State(k);
      EXPECT_EQ(s.step, steps);
      for (const std::string key : c.at("state").at(std::to_string(k))) {
        const at::Tensor& actual = StateTensor(s, key);
        ASSERT_TRUE(actual.defined()) << key << " of tensor " << k;
        const at::Tensor reference = ReadTensor(
            dir + key + "_" + std::to_string(k) + ".bin", actual.sizes().vec(), at::kFloat);
        ExpectBitwise(actual, reference, key + " of tensor " + std::to_string(k));
      }
    }
  }
}

// Under bf16 autocast transformers' eager attention takes the softmax in fp32 (its scores are
// fp32 once the fp32 mask is added) and autograd keeps those probabilities (4 B per score)
// besides their bf16 copy for the matmul; attention/eager takes the bf16 scores' softmax in bf16
// and keeps only the bf16 probabilities. One [rows, heads, tokens, tokens] fp32 tensor per
// layer, all alive at the run's peak (the loss's backward): 1,048,576 bytes here.
int64_t TransformersFp32SoftmaxBytes(const std::string& model_dir, const nlohmann::json& peaks) {
  const nlohmann::json config = ReadJson(model_dir + "/config.json");
  const int64_t tokens = peaks.at("tokens").get<int64_t>();
  return config.at("num_hidden_layers").get<int64_t>() * peaks.at("rows").get<int64_t>() *
         config.at("num_attention_heads").get<int64_t>() * tokens * tokens * 4;
}

config::RunConfig TrainingRun(const std::string& model_dir, const nlohmann::json& peaks) {
  const std::string text =
      "[experiment]\nname = \"adafactor-reference\"\nsteps = " +
      std::to_string(peaks.at("steps").get<int64_t>()) +
      "\nwarmup_steps = 1\nseed = 1\n"
      "[model]\nconfig = \"" + model_dir + "\"\n"
      "[data]\npath = \"data/devils-dictionary.jsonl\"\n"
      "[optimizer]\nlr = " + std::to_string(peaks.at("lr").get<double>()) +
      "\nweight_decay = 0.0\ngrad_clip = 1.0\n"
      "[device]\nthreads = 1\n"
      "[strategies.batching]\nseq_len = " + std::to_string(peaks.at("tokens").get<int64_t>()) +
      "\nmicro_batch_size = " + std::to_string(peaks.at("rows").get<int64_t>()) +
      "\n[strategies.loss]\nplugin = \"full\"\nkeep_logits = false\n"
      "[strategies.precision]\nplugin = \"" + (peaks.at("bf16") ? "bf16-autocast" : "fp32") +
      "\"\n"
      "[strategies.optimizer]\nplugin = \"adafactor\"\nrelative_step = false\n"
      "scale_parameter = false\n";
  return config::ParseRunConfig(text, testing_support::SourcePath("experiments/adafactor.toml"),
                                {});
}

TEST(AdafactorReferenceTest, TrainingPeaksEqualTransformersTrainer) {
  if (ReferenceDir() == nullptr) {
    GTEST_SKIP() << "MEMSWEEP_ADAFACTOR_REFERENCE_DIR is not set: ctest runs this test as "
                    "AdafactorReference.TrainingMatchesTransformers, with transformers' peaks";
  }
  for (const std::string name : {"untied", "tied", "untied_bf16", "tied_bf16"}) {
    SCOPED_TRACE(name);
    const std::string dir = std::string(ReferenceDir()) + "/training/" + name;
    const nlohmann::json peaks = ReadJson(dir + "/peaks.json");
    ASSERT_FALSE(peaks.empty());
    const train::RunResult r = testing_support::Train(TrainingRun(dir, peaks));
    ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
    const int64_t peak = r.memory.peak_allocated_bytes;
    const int64_t step_peak = r.memory.phases[2].peak_bytes;  // optimizer_step, every step
    const int64_t reference = peaks.at("peak"), reference_step = peaks.at("optimizer_step_peak");
    const double ratio = static_cast<double>(peak) / static_cast<double>(reference);
    const double step_ratio = static_cast<double>(step_peak) / static_cast<double>(reference_step);
    std::printf("%s: run peak %lld, transformers %lld (%.4f); optimizer step peak %lld, "
                "transformers %lld (%.4f)\n",
                name.c_str(), static_cast<long long>(peak), static_cast<long long>(reference),
                ratio, static_cast<long long>(step_peak), static_cast<long long>(reference_step),
                step_ratio);
    EXPECT_NEAR(step_ratio, 1.0, 0.01);
    // Under bf16 autocast the run's peak lies in the loss's backward, where transformers also
    // holds its fp32 attention probabilities (TransformersFp32SoftmaxBytes).
    const int64_t softmax_fp32 = peaks.at("bf16") ? TransformersFp32SoftmaxBytes(dir, peaks) : 0;
    const double held_ratio =
        static_cast<double>(peak + softmax_fp32) / static_cast<double>(reference);
    if (softmax_fp32 > 0) {
      std::printf("%s: run peak + transformers' fp32 attention probabilities (%lld) %lld (%.4f)\n",
                  name.c_str(), static_cast<long long>(softmax_fp32),
                  static_cast<long long>(peak + softmax_fp32), held_ratio);
    }
    EXPECT_NEAR(held_ratio, 1.0, 0.01);
    std::printf("%s: forward peak %lld, backward peak %lld\n", name.c_str(),
                static_cast<long long>(r.memory.phases[0].peak_bytes),
                static_cast<long long>(r.memory.phases[1].peak_bytes));
  }
}

}  // namespace
}  // namespace memsweep::adafactor_reference_test
