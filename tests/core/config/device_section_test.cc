// [device] on every machine: emulated GPUs (named and custom) set the budget to their usable
// memory, the refusals name what to do, and plugins that cannot run on a device say so at plan
// time. CUDA-only paths (index on a GPU machine, emulating a card larger than the GPU) are in the
// gpu tests.
#include <gtest/gtest.h>

#include <string>

#include "core/config/run_config_loader.h"
#include "core/config/strategy_resolver.h"
#include "core/env/cuda_probe.h"
#include "core/env/gpu_catalog.h"
#include "support/run_configs.h"

namespace memsweep::config::device_section_test {
namespace {

using testing_support::SourcePath;

const std::string kSource = SourcePath("experiments/test.toml");
const std::string kData = "[data]\npath = \"data/devils-dictionary.jsonl\"\n";

std::string ErrorOf(const std::string& text) {
  try {
    ParseRunConfig(text, kSource);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(DeviceSectionTest, ANamedGpuSetsTheBudgetToItsUsableMemory) {
  const RunConfig cfg = ParseRunConfig(kData + "[device]\nemulate = \"A10G\"\n", kSource);
  const env::GpuModel* a10g = env::FindGpu("a10g");
  ASSERT_NE(a10g, nullptr);
  ASSERT_TRUE(cfg.device.emulate.has_value());
  EXPECT_EQ(cfg.device.emulate->name, "a10g");
  EXPECT_EQ(cfg.device.emulate->total_bytes, a10g->total_bytes);
  EXPECT_EQ(cfg.device.emulate->context_bytes, a10g->context_bytes);
  EXPECT_EQ(cfg.device.memory_budget_bytes, a10g->total_bytes - a10g->context_bytes);
}

TEST(DeviceSectionTest, EveryNamedGpuLoads) {
  for (const std::string& name : env::GpuNames()) {
    const RunConfig cfg =
        ParseRunConfig(kData + "[device]\nemulate = \"" + name + "\"\n", kSource);
    EXPECT_EQ(cfg.device.memory_budget_bytes, env::FindGpu(name)->UsableBytes()) << name;
  }
}

TEST(DeviceSectionTest, TheContextOverheadCanBeOverridden) {
  const RunConfig cfg = ParseRunConfig(
      kData + "[device]\nemulate = \"t4\"\nemulate_context = \"1GiB\"\n", kSource);
  EXPECT_EQ(cfg.device.emulate->context_bytes, 1LL << 30);
  EXPECT_EQ(cfg.device.memory_budget_bytes, env::FindGpu("t4")->total_bytes - (1LL << 30));
  const RunConfig none = ParseRunConfig(
      kData + "[device]\nemulate = \"t4\"\nemulate_context = 0\n", kSource);
  EXPECT_EQ(none.device.memory_budget_bytes, env::FindGpu("t4")->total_bytes);
}

TEST(DeviceSectionTest, ACustomCapacityIsUsableMemoryUnlessAContextIsGiven) {
  const RunConfig plain = ParseRunConfig(kData + "[device]\nemulate = \"20GiB\"\n", kSource);
  EXPECT_EQ(plain.device.emulate->name, "custom");
  EXPECT_EQ(plain.device.memory_budget_bytes, 20LL << 30);
  const RunConfig with_context = ParseRunConfig(
      kData + "[device]\nemulate = \"20GiB\"\nemulate_context = \"512MiB\"\n", kSource);
  EXPECT_EQ(with_context.device.memory_budget_bytes, (20LL << 30) - (512LL << 20));
}

TEST(DeviceSectionTest, EmulateRefusalsNameTheLineAndWhatToDo) {
  const std::string unknown = ErrorOf(kData + "[device]\nemulate = \"a10\"\n");
  EXPECT_EQ(unknown.rfind(kSource + ":4:", 0), 0u) << unknown;
  EXPECT_TRUE(Contains(unknown, "a10g, ")) << unknown;  // the names it knows
  EXPECT_TRUE(Contains(unknown, "\"20GiB\"")) << unknown;
  const std::string both = ErrorOf(kData + "[device]\nmemory_budget = \"1GiB\"\nemulate = \"t4\"\n");
  EXPECT_TRUE(Contains(both, "keep one of the two")) << both;
  const std::string orphan = ErrorOf(kData + "[device]\nemulate_context = \"1GiB\"\n");
  EXPECT_TRUE(Contains(orphan, "add emulate")) << orphan;
  const std::string too_much =
      ErrorOf(kData + "[device]\nemulate = \"1GiB\"\nemulate_context = \"2GiB\"\n");
  EXPECT_TRUE(Contains(too_much, "leaves nothing")) << too_much;
}

TEST(DeviceSectionTest, WithoutAGpuAutoIsTheCpuAndCudaSaysWhatWasFound) {
  const env::CudaProbe& cuda = env::ProbeCuda();
  if (cuda.usable()) GTEST_SKIP() << "this machine has a usable CUDA device";
  const RunConfig cfg = ParseRunConfig(kData + "[device]\ntype = \"auto\"\n", kSource);
  EXPECT_EQ(cfg.device.type, "cpu");
  EXPECT_TRUE(cfg.device.auto_selected);
  const std::string error = ErrorOf(kData + "[device]\ntype = \"cuda\"\nemulate = \"t4\"\n");
  EXPECT_TRUE(Contains(error, cuda.reason)) << error;
  EXPECT_FALSE(cuda.reason.empty());  // the probe says which of the three things is missing
}

TEST(DeviceSectionTest, AnEmulatedGpuOnTheCpuSimulatesItsSizeAndStoresItsName) {
  const RunConfig cfg = ParseRunConfig(kData + "[device]\nemulate = \"64MiB\"\n", kSource);
  ASSERT_TRUE(cfg.device.memory_budget_bytes.has_value());
  const train::RunResult r =
      testing_support::Train(testing_support::TinyRun(2, {"device.emulate=\"64MiB\""}));
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  EXPECT_EQ(r.device.device, "cpu");
  EXPECT_EQ(r.device.emulated_gpu, "custom");
  EXPECT_EQ(r.device.budget_bytes, 64LL << 20);
  const train::RunResult tight =
      testing_support::Train(testing_support::TinyRun(2, {"device.emulate=\"3MiB\""}));
  EXPECT_EQ(tight.status, train::RunStatus::kOom) << tight.error;
}

// What a plugin that cannot run on a device says: asked directly, because on this machine the
// plan never reaches a CUDA device. (The gpu tests check the same refusals through the plan.)
std::string RefusalOf(const std::string& slot_overrides, c10::DeviceType device) {
  const RunConfig cfg = testing_support::TinyRun(1, {slot_overrides});
  for (const train::ActiveStrategy& s : InstantiateStrategies(cfg)) {
    const std::string why = s.impl->DeviceRefusal(device);
    if (!why.empty()) return s.slot + "/" + s.name + ": " + why;
  }
  return "";
}

TEST(DeviceSectionTest, CpuOnlyPluginsRefuseCudaNamingTheAlternative) {
  const std::string flash = RefusalOf("strategies.attention.plugin=\"flash\"", c10::kCUDA);
  EXPECT_TRUE(Contains(flash, "attention/flash: ")) << flash;
  EXPECT_TRUE(Contains(flash, "plugin = \"sdpa\"")) << flash;
  EXPECT_EQ(RefusalOf("strategies.attention.plugin=\"flash\"", c10::kCPU), "");
  // Device-independent plugins accept both devices.
  for (const char* plugin : {"eager", "chunked", "sdpa"}) {
    EXPECT_EQ(RefusalOf(std::string("strategies.attention.plugin=\"") + plugin + "\"", c10::kCUDA),
              "")
        << plugin;
  }
  EXPECT_EQ(RefusalOf("strategies.precision.plugin=\"bf16-autocast\"", c10::kCUDA), "");
  EXPECT_EQ(RefusalOf("strategies.allocator.plugin=\"caching\"", c10::kCUDA), "");
}

TEST(DeviceSectionTest, CudaKernelsOfSdpaAreRefusedOnTheCpuAtPlanTime) {
  for (const char* backend : {"efficient", "cudnn"}) {
    const std::string error = ErrorOf(kData + "[strategies.attention]\nplugin = \"sdpa\"\n"
                                      "backend = \"" + backend + "\"\n");
    EXPECT_TRUE(Contains(error, "[strategies.attention] plugin = \"sdpa\" cannot run on the CPU"))
        << error;
    EXPECT_TRUE(Contains(error, "a CUDA kernel")) << error;
  }
  const std::string unknown =
      ErrorOf(kData + "[strategies.attention]\nplugin = \"sdpa\"\nbackend = \"xformers\"\n");
  EXPECT_TRUE(Contains(unknown, "is not a kernel")) << unknown;
}

}  // namespace
}  // namespace memsweep::config::device_section_test
