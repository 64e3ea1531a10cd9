// optimizer/adamw_8bit (bitsandbytes' AdamW8bit): its state and its step's peak to the byte, from
// the tensors' shapes, as memsweep's tracking allocator counts them; the same on meta tensors
// (the estimate's device, standing for the CPU and for CUDA); the estimate of a tiny cell against
// its measured run; its parameters' checks.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/estimate/cell_estimate.h"
#include "core/memory/meta_tracking.h"
#include "core/memory/storage_bytes.h"
#include "core/memory/tracking_allocator.h"
#include "core/model/llama.h"
#include "core/sdk/meta_target.h"
#include "optimizer/adamw_8bit/blockwise_quant.h"
#include "optimizer/adamw_8bit/bnb_adamw.h"
#include "optimizer/adamw_8bit/bnb_update.h"
#include "support/optimizer_steps.h"
#include "support/run_configs.h"

namespace memsweep::adamw_8bit_test {
namespace {

using namespace plugins::optimizer;

// A scalar handed to an op that takes a tensor (mul_(β), div(√v, c2)) becomes a 0-dim double
// tensor; on the CPU TensorIterator casts it to float, another 0-dim tensor. Both live while the
// op runs (tests/plugins/optimizer/torch_adamw/torch_adamw_test.cc measures them).
constexpr int64_t kWrappedScalarBytes = 8;
constexpr int64_t kCastScalarBytes = 4;
constexpr int64_t kScalarBytes = kWrappedScalarBytes + kCastScalarBytes;

memory::TrackingAllocator& Tracker() { return memory::TrackingAllocator::Instance(); }

// Below min_8bit_size (fp32 moments); exactly min_8bit_size; a short last block; whole blocks.
const std::vector<std::vector<int64_t>> kShapes = {{1000}, {64, 64}, {300, 77}, {128, 256}};

int64_t Numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::vector<at::Tensor> MakeTensors(c10::Device device = c10::kCPU,
                                    at::ScalarType dtype = at::kFloat) {
  torch::manual_seed(3);
  std::vector<at::Tensor> tensors;
  for (const auto& shape : kShapes) {
    at::Tensor p = (at::randn(shape) * 0.1).to(device, dtype);
    p.set_requires_grad(true);
    p.mutable_grad() = (at::randn(shape) * 0.01).to(device, dtype);
    tensors.push_back(p);
  }
  return tensors;
}

OptimizerStepSpec Spec(int64_t step) { return testing_support::OptimizerTestSpec(step); }

// What one Step adds above the bytes held before it, at its highest.
int64_t StepPeakRise(BnbAdamW& optimizer, int64_t step) {
  return testing_support::StepPeakRise(optimizer, Spec(step));
}

// By hand, per tensor of n elements (fp32 values and gradients), the state bitsandbytes keeps:
//   8 bits (n >= 4096): two uint8 codes per element, two fp32 absmax per 256-value block;
//   32 bits: two fp32 moments per element.
int64_t StateBytes(int64_t n, int bits) {
  if (bits == 8 && n >= 4096) return 2 * n + 2 * 4 * ((n + 255) / 256);
  return 8 * n;
}
// ... and the CPU backend's temporaries at their highest:
//   8 bits: the dequantised moments, g.float() * 1, √v and √v / c2 (a wrapped scalar) = 20n;
//   32 bits: g.float() * 1, √v and √v + eps·c2 (a wrapped scalar) = 12n.
int64_t Temporaries(int64_t n, int bits) {
  return (bits == 8 && n >= 4096 ? 20 * n : 12 * n) + kScalarBytes;
}

// The maps BlockwiseCode builds once per process (ATen temporaries the first time).
void WarmUp() {
  BlockwiseCode::Get(true);
  BlockwiseCode::Get(false);
}

TEST(AdamW8bitTest, StateBytesEqualTheFormula) {
  WarmUp();
  for (const int bits : {8, 32}) {
    std::vector<at::Tensor> tensors = MakeTensors();
    at::Tensor frozen = at::randn({100, 100});  // no gradient: no state
    tensors.push_back(frozen);
    BnbAdamWOptions options;
    options.bits = bits;
    BnbAdamW optimizer(tensors, options);
    EXPECT_TRUE(optimizer.StateTensors().empty());
    const int64_t before = Tracker().AllocatedBytes();
    optimizer.Step(Spec(1));
    const int64_t held = Tracker().AllocatedBytes() - before;
    int64_t expected = bits == 8 ? kBnbMapBytes : 0;
    for (size_t i = 0; i < kShapes.size(); ++i) {
      const int64_t n = Numel(kShapes[i]);
      expected += StateBytes(n, bits);
      EXPECT_EQ(BnbTensorStateBytes(n, options).device, StateBytes(n, bits));
      const BnbAdamW::State& s = optimizer.StateOf(i);
      EXPECT_EQ(s.EightBit(), bits == 8 && n >= 4096) << n;
      EXPECT_EQ(s.state1.sizes(), tensors[i].sizes());
      EXPECT_EQ(s.state1.scalar_type(), s.EightBit() ? at::kByte : at::kFloat);
      if (s.EightBit()) EXPECT_EQ(s.absmax1.numel(), (n + 255) / 256);
    }
    EXPECT_FALSE(optimizer.StateOf(kShapes.size()).state1.defined());
    const int64_t state = memory::DistinctStorageBytes(optimizer.StateTensors());
    std::printf("%d-bit state: %lld bytes (held %lld) for 4 tensors of 61,964 elements\n", bits,
                static_cast<long long>(state), static_cast<long long>(held));
    EXPECT_EQ(state, expected) << bits;
    EXPECT_EQ(held, expected) << bits;
  }
}

// The first step makes each tensor's state just before its update; later steps add only the
// temporaries of one tensor's update at a time.
TEST(AdamW8bitTest, StepPeakIsStatePlusTheCpuBackendsTemporaries) {
  WarmUp();
  for (const int bits : {8, 32}) {
    const std::vector<at::Tensor> tensors = MakeTensors();
    BnbAdamWOptions options;
    options.bits = bits;
    BnbAdamW optimizer(tensors, options);
    int64_t first = 0, later = 0, state = 0;
    bool maps = false;
    for (const auto& shape : kShapes) {
      const int64_t n = Numel(shape);
      if (bits == 8 && n >= 4096 && !maps) {
        state += kBnbMapBytes;  // made at the first 8-bit tensor
        maps = true;
      }
      state += StateBytes(n, bits);
      first = std::max(first, state + Temporaries(n, bits));
      later = std::max(later, Temporaries(n, bits));
    }
    const int64_t rise1 = StepPeakRise(optimizer, 1);
    const int64_t rise2 = StepPeakRise(optimizer, 2);
    std::printf("%d-bit step peak above what it finds: first %lld (by hand %lld), second %lld "
                "(by hand %lld) bytes\n",
                bits, static_cast<long long>(rise1), static_cast<long long>(first),
                static_cast<long long>(rise2), static_cast<long long>(later));
    EXPECT_EQ(rise1, first) << bits;
    EXPECT_EQ(rise2, later) << bits;
  }
}

// The same steps on meta tensors standing for the CPU: the same state and temporaries, less the
// 0-dim cast TensorIterator makes only on the CPU.
TEST(AdamW8bitTest, MetaStepsAllocateWhatTheCpuStepsDo) {
  WarmUp();
  memory::InstallMetaTracking();
  SetMetaDeviceTarget(c10::DeviceType::CPU);
  for (const int bits : {8, 32}) {
    std::vector<int64_t> rises[2];
    int64_t state[2] = {0, 0};
    for (const c10::Device device : {c10::Device(c10::kCPU), c10::Device(c10::kMeta)}) {
      const std::vector<at::Tensor> tensors = MakeTensors(device);
      BnbAdamWOptions options;
      options.bits = bits;
      BnbAdamW optimizer(tensors, options);
      for (int64_t step = 1; step <= 2; ++step) {
        rises[device.is_meta()].push_back(StepPeakRise(optimizer, step));
      }
      state[device.is_meta()] = memory::DistinctStorageBytes(optimizer.StateTensors());
    }
    EXPECT_EQ(state[1], state[0]) << bits;
    for (size_t s = 0; s < 2; ++s) {
      std::printf("%d-bit step %zu: cpu %lld, meta %lld bytes\n", bits, s + 1,
                  static_cast<long long>(rises[0][s]), static_cast<long long>(rises[1][s]));
      EXPECT_EQ(rises[1][s], rises[0][s] - kCastScalarBytes) << bits;
    }
  }
}

// The device form (CUDA's) on one tensor, by hand per chunk of L elements: 8 bits, at the
// requantisation of exp_avg, both dequantised moments (8L), its table bins (int64, 8L), and per
// block the zero-block mask (1 B) and the absmax reciprocals (4 B); 32 bits, the denominator and
// the update (8L). Measured on CPU tensors and on meta tensors (an estimate standing for CUDA
// runs this form): the same bytes.
TEST(AdamW8bitTest, DeviceFormTemporariesAreBoundedByTheChunk) {
  WarmUp();
  memory::InstallMetaTracking();
  const BlockwiseCode& sc = BlockwiseCode::Get(true);
  const BlockwiseCode& uc = BlockwiseCode::Get(false);
  for (const int64_t n : {int64_t{23100}, int64_t{3 * 1024 + 100}}) {
    for (const int64_t chunk : {int64_t{1024}, kDeviceChunk}) {
      const int64_t l = std::min(n, chunk), blocks = (l + 255) / 256;
      int64_t rise8[2], rise32[2];
      for (const c10::Device device : {c10::Device(c10::kCPU), c10::Device(c10::kMeta)}) {
        const at::TensorOptions f = at::TensorOptions().device(device);
        at::Tensor p = at::randn({n}).to(device), g = (at::randn({n}) * 0.01).to(device);
        const int64_t nb = (n + 255) / 256;
        const EightBitMoments s{at::zeros({n}, f.dtype(at::kByte)), at::zeros({nb}, f),
                                at::zeros({n}, f.dtype(at::kByte)), at::zeros({nb}, f)};
        const DeviceCodes codes{at::tensor(sc.map).to(device), at::tensor(sc.lut).to(device),
                                at::tensor(uc.map).to(device), at::tensor(uc.lut).to(device)};
        const at::Tensor m = at::zeros({n}, f), v = at::zeros({n}, f);
        int64_t before = Tracker().AllocatedBytes();
        Tracker().ResetWindowPeak();
        DeviceUpdate8bit(p, g, s, codes, BnbHyper{1e-2, 0.9, 0.999, 1e-8, 0.1, 1}, chunk);
        rise8[device.is_meta()] = Tracker().WindowPeakBytes() - before;
        before = Tracker().AllocatedBytes();
        Tracker().ResetWindowPeak();
        DeviceUpdate32bit(p, g, m, v, BnbHyper{1e-2, 0.9, 0.999, 1e-8, 0.1, 1}, chunk);
        rise32[device.is_meta()] = Tracker().WindowPeakBytes() - before;
      }
      std::printf("device form, n %lld, chunk %lld: 8-bit cpu %lld meta %lld (by hand %lld); "
                  "32-bit cpu %lld meta %lld (by hand %lld)\n",
                  static_cast<long long>(n), static_cast<long long>(chunk),
                  static_cast<long long>(rise8[0]), static_cast<long long>(rise8[1]),
                  static_cast<long long>(16 * l + 5 * blocks), static_cast<long long>(rise32[0]),
                  static_cast<long long>(rise32[1]), static_cast<long long>(8 * l));
      EXPECT_EQ(rise8[0], 16 * l + 5 * blocks);
      EXPECT_EQ(rise8[1], rise8[0]);
      EXPECT_EQ(rise32[0], 8 * l);
      EXPECT_EQ(rise32[1], rise32[0]);
    }
  }
}

// A tiny cell, 8- and 32-bit state: the run and its estimate (the loop on meta tensors).
TEST(AdamW8bitTest, EstimateEqualsTheMeasuredRun) {
  for (const std::string plugin : {"adamw_8bit", "adamw_32bit"}) {
    const config::RunConfig cfg = testing_support::TinyRun(
        3, {"strategies.optimizer.plugin=\"" + plugin + "\""});
    testing_support::Train(testing_support::TinyRun(1, {"strategies.optimizer.plugin=\"" +
                                                        plugin + "\""}));  // the maps, once
    const train::RunResult measured = testing_support::Train(cfg);
    ASSERT_EQ(measured.status, train::RunStatus::kOk) << measured.error;
    const estimate::CellEstimate e = estimate::EstimateRun(cfg);
    ASSERT_EQ(e.status, estimate::EstimateStatus::kEstimated) << e.message;
    const train::MemoryBreakdown& m = measured.memory;
    const train::MemoryBreakdown& x = e.run.memory;
    std::printf("%s: peak %lld measured, %lld estimated; optimizer_step %lld, %lld; optimizer "
                "state %lld, %lld\n",
                plugin.c_str(), static_cast<long long>(m.peak_allocated_bytes),
                static_cast<long long>(x.peak_allocated_bytes),
                static_cast<long long>(m.phases[2].peak_bytes),
                static_cast<long long>(x.phases[2].peak_bytes),
                static_cast<long long>(m.optimizer_bytes),
                static_cast<long long>(x.optimizer_bytes));
    EXPECT_EQ(x.optimizer_bytes, m.optimizer_bytes) << plugin;
    EXPECT_LE(x.peak_allocated_bytes, m.peak_allocated_bytes) << plugin;
    EXPECT_GE(x.peak_allocated_bytes, m.peak_allocated_bytes - kCastScalarBytes) << plugin;
    EXPECT_LE(x.phases[2].peak_bytes, m.phases[2].peak_bytes) << plugin;
    EXPECT_GE(x.phases[2].peak_bytes, m.phases[2].peak_bytes - kCastScalarBytes) << plugin;
  }
}

// The tiny model's state: the breakdown's optimizer figure is the formula over its parameters.
TEST(AdamW8bitTest, RunBreakdownCountsTheStateOfEveryParameter) {
  const config::RunConfig cfg =
      testing_support::TinyRun(2, {"strategies.optimizer.plugin=\"adamw_8bit\""});
  const train::RunResult r = testing_support::Train(cfg);
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  model::LlamaModel model(cfg.model.llama);
  BnbAdamWOptions options;
  int64_t expected = kBnbMapBytes;
  for (const at::Tensor& p : model->parameters()) {
    expected += BnbTensorStateBytes(p.numel(), options).device;
  }
  std::printf("tiny model, %lld parameters: optimizer state %lld bytes (adamw: %lld)\n",
              static_cast<long long>(cfg.model.llama.ParameterCount()),
              static_cast<long long>(r.memory.optimizer_bytes),
              static_cast<long long>(8 * cfg.model.llama.ParameterCount()));
  EXPECT_EQ(r.memory.optimizer_bytes, expected);
  for (const auto& step : r.steps) EXPECT_TRUE(std::isfinite(step.loss));
  for (const auto& step : r.steps) {
    EXPECT_EQ(step.metrics.count("adamw_8bit.paged_state_bytes"), 0u);
  }
}

// The estimate of a CUDA run with paged state (the tiny model with a 2,048-token vocabulary,
// whose embedding and head reach 100,000 elements): the paged moments are a step figure, not
// optimizer bytes of the device.
TEST(AdamW8bitTest, EstimateOfAPagedCudaRunReportsThePagedBytes) {
  for (const std::string plugin : {"adamw_8bit", "adamw_32bit"}) {
    const config::RunConfig cfg = testing_support::TinyRun(
        2, {"strategies.optimizer.plugin=\"" + plugin + "\"", "strategies.optimizer.paged=true",
            "model.vocab_size=2048"},
        config::ReadFor::kEstimate);
    const estimate::CellEstimate e = estimate::EstimateRun(cfg, c10::DeviceType::CUDA);
    ASSERT_EQ(e.status, estimate::EstimateStatus::kEstimated) << e.message;
    BnbAdamWOptions options;
    options.bits = plugin == "adamw_8bit" ? 8 : 32;
    options.paged = true;
    int64_t device = options.bits == 8 ? kBnbMapBytes + 2 * kBnbLutBins : 0, paged = 0;
    model::LlamaModel model(cfg.model.llama);
    for (const at::Tensor& p : model->parameters()) {
      device += BnbTensorStateBytes(p.numel(), options).device;
      paged += BnbTensorStateBytes(p.numel(), options).paged;
    }
    std::printf("%s, paged, estimate for CUDA: optimizer %lld bytes on the device, %lld paged\n",
                plugin.c_str(), static_cast<long long>(e.run.memory.optimizer_bytes),
                static_cast<long long>(paged));
    EXPECT_GT(paged, 0) << plugin;
    EXPECT_EQ(e.run.memory.optimizer_bytes, device) << plugin;
    ASSERT_FALSE(e.run.steps.empty());
    for (const auto& step : e.run.steps) {
      EXPECT_EQ(step.metrics.at(plugin + ".paged_state_bytes"), static_cast<double>(paged))
          << plugin;
    }
  }
}

TEST(AdamW8bitTest, RejectsANegativeMin8bitSize) {
  try {
    testing_support::Train(testing_support::TinyRun(
        1, {"strategies.optimizer.plugin=\"adamw_8bit\"",
            "strategies.optimizer.min_8bit_size=-1"}));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("min_8bit_size = -1 is out of range"), std::string::npos)
        << e.what();
  }
}

TEST(AdamW8bitTest, RefusesPagedStateOnTheCpu) {
  try {
    testing_support::Train(testing_support::TinyRun(
        1, {"strategies.optimizer.plugin=\"adamw_8bit\"", "strategies.optimizer.paged=true"}));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("on the CPU use paged = false"), std::string::npos)
        << e.what();
  }
}

// Paged state on meta tensors standing for CUDA (the estimate of a CUDA run): the moments of
// tensors of >= 100,000 elements leave the device's figures, their bytes go to PagedBytes.
TEST(AdamW8bitTest, PagedMomentsAreOutsideTheDevicesBytes) {
  WarmUp();
  memory::InstallMetaTracking();
  SetMetaDeviceTarget(c10::DeviceType::CUDA);
  for (const int bits : {8, 32}) {
    std::vector<at::Tensor> tensors;
    for (const int64_t n : {int64_t{99999}, int64_t{100000}, int64_t{300000}}) {
      at::Tensor p = at::empty({n}, at::device(c10::kMeta));
      p.mutable_grad() = at::empty({n}, at::device(c10::kMeta));
      tensors.push_back(p);
    }
    BnbAdamWOptions options;
    options.bits = bits;
    options.paged = true;
    BnbAdamW optimizer(tensors, options);
    const int64_t before = Tracker().AllocatedBytes();
    optimizer.Step(Spec(1));
    const int64_t held = Tracker().AllocatedBytes() - before;
    int64_t device = bits == 8 ? kBnbMapBytes + 2 * kBnbLutBins : 0, paged = 0;
    for (const at::Tensor& p : tensors) {
      device += BnbTensorStateBytes(p.numel(), options).device;
      paged += BnbTensorStateBytes(p.numel(), options).paged;
    }
    const int64_t moment = bits == 8 ? 1 : 4;
    EXPECT_EQ(paged, 2 * moment * 400000) << bits;
    std::printf("%d-bit paged: device %lld bytes, paged %lld bytes\n", bits,
                static_cast<long long>(held), static_cast<long long>(optimizer.PagedBytes()));
    EXPECT_EQ(held, device) << bits;
    EXPECT_EQ(memory::DistinctStorageBytes(optimizer.StateTensors()), device) << bits;
    EXPECT_EQ(optimizer.PagedBytes(), paged) << bits;
  }
  SetMetaDeviceTarget(c10::DeviceType::CPU);
}

}  // namespace
}  // namespace memsweep::adamw_8bit_test
