#include "core/config/run_config_loader.h"
#include "core/env/cuda_probe.h"
#include "core/env/onednn_matmul.h"
#include "core/config/strategy_resolver.h"
#include "core/memory/byte_size.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/run_configs.h"

namespace memsweep::config {
namespace {

using testing_support::SourcePath;

// Experiment files written into the experiments/ folder's neighbourhood would pollute the repo;
// tests parse text with a source name inside experiments/ so relative data paths resolve.
const std::string kSource = SourcePath("experiments/test.toml");
const std::string kData = "[data]\npath = \"data/devils-dictionary.jsonl\"\n";

std::string ErrorOf(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    ParseRunConfig(text, kSource, overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(RunConfigLoaderTest, ReadsEverySectionAndResolvesTheDataPath) {
  const RunConfig cfg = ParseRunConfig(
      "[experiment]\nname = \"x\"\nsteps = 7\nseed = 9\n"
      "[model]\npreset = \"small\"\nnum_hidden_layers = 2\n" + kData +
          "[strategies.batching]\nseq_len = 64\npadding = \"max_length\"\nmicro_batch_size = 3\n"
          "[optimizer]\nlr = 1\n[device]\nthreads = 1\nmemory_budget = \"2GiB\"\n",
      kSource);
  EXPECT_EQ(cfg.experiment.name, "x");
  EXPECT_EQ(cfg.experiment.steps, 7);
  EXPECT_EQ(cfg.experiment.seed, 9u);
  EXPECT_EQ(cfg.model.llama.hidden_size, 512);
  EXPECT_EQ(cfg.model.llama.num_hidden_layers, 2);
  EXPECT_EQ(cfg.data.path, SourcePath("experiments/data/devils-dictionary.jsonl"));
  const data::DataConfig& batches = cfg.data;  // validated: as the batching plugin configured it
  EXPECT_EQ(batches.padding, data::Padding::kMaxLength);
  EXPECT_EQ(batches.micro_batch_size, 3);
  ASSERT_EQ(cfg.strategies.size(), 11u);
  EXPECT_EQ(cfg.strategies[6].slot, "batching");
  EXPECT_EQ(cfg.strategies[6].params.Int("seq_len"), 64);
  EXPECT_DOUBLE_EQ(cfg.optimizer.lr, 1.0);
  EXPECT_EQ(cfg.device.memory_budget_bytes, 2LL << 30);
}

TEST(RunConfigLoaderTest, GemmChoosesTheBf16PathAndOldValuesAreRefusedWithTheirLine) {
  // [device] gemm once chose Debian LibTorch 1.13's sgemm_ forwarding ("onednn", ...); it now
  // chooses how bf16 products run on the CPU (core/env/cpu_gemm.h).
  const std::string error = ErrorOf(kData + "[device]\nthreads = 1\ngemm = \"onednn\"\n");
  EXPECT_EQ(error.rfind(kSource + ":5:", 0), 0u) << error;
  EXPECT_NE(error.find("is not one of: auto, native, upcast"), std::string::npos) << error;
  EXPECT_EQ(ParseRunConfig(kData + "[device]\ngemm = \"upcast\"\n", kSource).device.gemm,
            env::Bf16GemmSetting::kUpcast);
  EXPECT_EQ(ParseRunConfig(kData, kSource).device.gemm, env::Bf16GemmSetting::kAuto);
}

TEST(RunConfigLoaderTest, Fp32GemmChoosesTheFp32PathAndOnednnOnlyWhereTheCpuCanRunIt) {
  const std::string error = ErrorOf(kData + "[device]\nthreads = 1\nfp32_gemm = \"mkl\"\n");
  EXPECT_EQ(error.rfind(kSource + ":5:", 0), 0u) << error;
  EXPECT_NE(error.find("is not one of: auto, native, onednn"), std::string::npos) << error;
  EXPECT_EQ(ParseRunConfig(kData, kSource).device.fp32_gemm, env::Fp32GemmSetting::kAuto);
  EXPECT_EQ(ParseRunConfig(kData + "[device]\nfp32_gemm = \"native\"\n", kSource).device.fp32_gemm,
            env::Fp32GemmSetting::kNative);
  const std::string onednn = kData + "[device]\nfp32_gemm = \"onednn\"\n";
  if (env::OnednnFp32Usable()) {
    EXPECT_EQ(ParseRunConfig(onednn, kSource).device.fp32_gemm, env::Fp32GemmSetting::kOnednn);
  } else {  // refused at plan time, naming what to use instead
    const std::string refused = ErrorOf(onednn);
    EXPECT_EQ(refused.rfind(kSource + ":4:", 0), 0u) << refused;
    EXPECT_NE(refused.find("use \"native\""), std::string::npos) << refused;
  }
}

TEST(RunConfigLoaderTest, CudaWithoutAUsableGpuIsRefusedSayingWhatWasFound) {
  const env::CudaProbe& cuda = env::ProbeCuda();
  if (cuda.usable()) GTEST_SKIP() << "this machine has a usable CUDA device";
  const std::string error = ErrorOf(kData + "[device]\ntype = \"cuda\"\n");
  EXPECT_EQ(error.rfind(kSource + ":4:", 0), 0u) << error;
  // CPU-only build, no driver, or no device: the message says which, and what to use instead.
  EXPECT_NE(error.find(cuda.reason), std::string::npos) << error;
  EXPECT_NE(error.find("type = \"cpu\""), std::string::npos) << error;
}

// memsweep plan reads a CUDA cell without a GPU: the cell stays CUDA's and says why it cannot
// run here; a run's reading still refuses it (above).
TEST(RunConfigLoaderTest, APlanReadsACudaCellWithoutAGpu) {
  const env::CudaProbe& cuda = env::ProbeCuda();
  if (cuda.usable()) GTEST_SKIP() << "this machine has a usable CUDA device";
  const ValidatedRun run = ValidatedRunFromTable(
      ParseToml(kData + "[device]\ntype = \"cuda\"\nworld_size = 2\n", kSource), kSource,
      ReadFor::kPlan);
  EXPECT_EQ(run.config.device.type, "cuda");
  EXPECT_EQ(run.config.device.gpu_needed, cuda.reason);
}

// A budget below the model's fp32 parameters is no input error (a matrix over cards asks which
// fit): the run is an oom before its first step, with the figures; a frozen base is measured.
TEST(RunConfigLoaderTest, ABudgetBelowTheParametersIsAnOomBeforeTheRun) {
  const ValidatedRun run = ValidatedRunFromTable(
      ParseToml(kData + "[device]\nmemory_budget = \"100KiB\"\n", kSource), kSource);
  const int64_t param_bytes = run.config.model.llama.ParameterCount() * 4;
  EXPECT_EQ(run.oom_before_run,
            "out of memory before the first step: the model's fp32 parameters alone need " +
                memory::FormatBytes(param_bytes) +
                " of 100.00 KiB of device memory (not trained; a larger device, or an adapter "
                "that freezes the base, may fit)");
  const ValidatedRun fits = ValidatedRunFromTable(
      ParseToml(kData + "[device]\nmemory_budget = \"64MiB\"\n", kSource), kSource);
  EXPECT_EQ(fits.oom_before_run, "");
  const ValidatedRun frozen = ValidatedRunFromTable(
      ParseToml(kData + "[device]\nmemory_budget = \"100KiB\"\n"
                        "[strategies.adapter]\nplugin = \"lora\"\n", kSource),
      kSource);
  EXPECT_EQ(frozen.oom_before_run, "");
}

TEST(RunConfigLoaderTest, AutoTakesTheCpuWhereThereIsNoGpu) {
  if (env::ProbeCuda().usable()) GTEST_SKIP() << "this machine has a usable CUDA device";
  const RunConfig cfg = ParseRunConfig(kData + "[device]\ntype = \"auto\"\n", kSource);
  EXPECT_EQ(cfg.device.type, "cpu");
}

TEST(RunConfigLoaderTest, DeviceIndexIsRefusedOnTheCpuDevice) {
  const std::string error = ErrorOf(kData + "[device]\nindex = 1\n");
  EXPECT_EQ(error.rfind(kSource + ":4:", 0), 0u) << error;
  EXPECT_NE(error.find("selects a CUDA device"), std::string::npos) << error;
  EXPECT_NE(ErrorOf(kData + "[device]\nindex = -1\n").find("must be 0 or more"), std::string::npos);
}

TEST(RunConfigLoaderTest, MalformedTomlNamesFileLineAndColumn) {
  const std::string error = ErrorOf(kData + "format = = 3\n");
  EXPECT_EQ(error.rfind(kSource + ":3:", 0), 0u) << error;
  EXPECT_NE(error.find("TOML syntax error"), std::string::npos) << error;
}

TEST(RunConfigLoaderTest, UnknownKeyListsTheAllowedOnes) {
  const std::string error = ErrorOf(kData + "[model]\nhidden = 3\n");
  EXPECT_EQ(error.rfind(kSource + ":4:1: unknown key 'hidden' in [model]", 0), 0u) << error;
  EXPECT_NE(error.find("allowed keys: preset, config, vocab_size, hidden_size"), std::string::npos)
      << error;
  EXPECT_NE(ErrorOf(kData + "[training]\nx = 1\n").find("unknown section [training]"),
            std::string::npos);
}

TEST(RunConfigLoaderTest, WrongTypeSaysWhatWasExpected) {
  const std::string error = ErrorOf(kData + "[experiment]\nsteps = \"many\"\n");
  EXPECT_NE(error.find(":4:9: [experiment] steps must be an integer (found a string)"),
            std::string::npos)
      << error;
}

TEST(RunConfigLoaderTest, ImpossibleConfigurationsSayWhatToChange) {
  EXPECT_NE(ErrorOf(kData + "[model]\nhidden_size = 100\nnum_attention_heads = 3\n")
                .find("not divisible by num_attention_heads"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[data]\npath = \"data/nope.jsonl\"\n").find("does not exist"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kData + "[device]\nmemory_budget = \"lots\"\n").find("must be a size"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kData + "[strategies.batching]\npadding = \"left\"\n")
                .find("is not one of: longest, max_length"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kData + "[strategies.batching]\nseq_len = 5000\n")
                .find("exceeds [model] max_position_embeddings"),
            std::string::npos);
}

TEST(RunConfigLoaderTest, SetOverridesApplyBeforeValidation) {
  const RunConfig cfg =
      ParseRunConfig(kData, kSource, {"strategies.batching.seq_len=32", "experiment.name=abc",
                                      "device.memory_budget=\"1GiB\""});
  EXPECT_EQ(cfg.data.seq_len, 32);
  EXPECT_EQ(cfg.experiment.name, "abc");
  EXPECT_EQ(cfg.device.memory_budget_bytes, 1LL << 30);
  EXPECT_NE(ErrorOf(kData, {"strategies.batching.seq_len=abc"}).find("seq_len must be an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kData, {"model.nope=1"}).find("unknown key 'nope'"), std::string::npos);
}

// A file with a [matrix] is several runs (see tests/core/experiment/); one RunConfig is one.
TEST(RunConfigLoaderTest, AMatrixFileIsNotOneRun) {
  const std::string error = ErrorOf(kData + "[matrix]\n\"data.seq_len\" = [8, 16]\n");
  EXPECT_EQ(error.rfind(kSource + ":3:2: [matrix] describes several runs", 0), 0u) << error;
  EXPECT_NE(error.find("`memsweep plan " + kSource + "`"), std::string::npos) << error;
  EXPECT_NE(error.find("--cell INDEX"), std::string::npos) << error;
}

}  // namespace
}  // namespace memsweep::config
