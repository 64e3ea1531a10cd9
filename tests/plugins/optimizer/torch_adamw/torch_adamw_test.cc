// optimizer/torch_adamw: its state and its step's peak to the byte, from the tensors' shapes, per
// implementation and parameter grouping, as memsweep's tracking allocator counts them; weight
// decay only on the Trainer's first group; the estimate (the step on meta tensors) against the
// measured run of a tiny cell.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

#include "core/estimate/cell_estimate.h"
#include "core/memory/meta_tracking.h"
#include "core/memory/storage_bytes.h"
#include "core/memory/tracking_allocator.h"
#include "optimizer/torch_adamw/torch_adamw.h"
#include "support/optimizer_steps.h"
#include "support/run_configs.h"

namespace memsweep::torch_adamw_test {
namespace {

using plugins::torch_adamw::Implementation;
using plugins::torch_adamw::ImplementationName;
using plugins::torch_adamw::ParamGroups;
using plugins::torch_adamw::ParamGroupsName;
using plugins::torch_adamw::ParseImplementation;
using plugins::torch_adamw::ParseParamGroups;
using plugins::torch_adamw::TorchAdamW;

constexpr Implementation kImplementations[] = {Implementation::kForLoop,
                                               Implementation::kForeach, Implementation::kFused};
constexpr ParamGroups kGroupings[] = {ParamGroups::kTrainer, ParamGroups::kSingle};

// A Python number (or a C++ Scalar) handed to an op that takes a tensor becomes a 0-dim tensor:
// double or int64, 8 bytes; on the CPU TensorIterator casts it to the other operand's dtype,
// another 0-dim tensor (4 bytes for float32). Both live while the op runs.
constexpr int64_t kWrappedScalarBytes = 8;
constexpr int64_t kCastScalarBytes = 4;
constexpr int64_t kStepBytes = 4;  // each tensor's `step`: a 0-dim float32 tensor

memory::TrackingAllocator& Tracker() { return memory::TrackingAllocator::Instance(); }

// Tensors of known shapes, each with a gradient: the largest last (an LM head), after a 1-D one
// (the final norm) in the model's order; with the Trainer's groups it follows the [64, 48] (the
// last 2-D weight) and the 1-D tensor comes alone, after it.
const std::vector<std::vector<int64_t>> kShapes = {{7, 13, 5}, {64, 48}, {1000}, {256, 64}};

// The parameter groups' indices into kShapes, in step order.
std::vector<std::vector<size_t>> Groups(ParamGroups groups) {
  if (groups == ParamGroups::kSingle) return {{0, 1, 2, 3}};
  return {{0, 1, 3}, {2}};  // 2+ dims, then 1-D
}

std::vector<at::Tensor> MakeTensors(c10::Device device = c10::kCPU) {
  torch::manual_seed(3);
  std::vector<at::Tensor> tensors;
  for (const auto& shape : kShapes) {
    at::Tensor p = at::randn(shape).to(device);
    p.set_requires_grad(true);
    p.mutable_grad() = at::randn(shape).to(device);
    tensors.push_back(p);
  }
  return tensors;
}

std::vector<int64_t> Bytes() {
  std::vector<int64_t> bytes;
  for (const auto& shape : kShapes) {
    bytes.push_back(4 * std::accumulate(shape.begin(), shape.end(), int64_t{1},
                                        std::multiplies<>()));
  }
  return bytes;
}

OptimizerStepSpec Spec(int64_t step) { return testing_support::OptimizerTestSpec(step); }

// What one Step adds above the bytes held before it, at its highest.
int64_t StepPeakRise(TorchAdamW& optimizer, int64_t step) {
  return testing_support::StepPeakRise(optimizer, Spec(step));
}

// One group's temporaries (one adam() call) at their highest, by hand from the shapes:
//   for-loop: tensor i's square root and quotient (exp_avg_sq.sqrt() / bias_correction2_sqrt,
//             the divisor a wrapped scalar, cast) while the group's tensor i-1's denominator is
//             still held (the call's local: a group starts without one);
//   foreach:  the group's list of square roots, during a _foreach_div_ by a wrapped scalar;
//   fused:    none but a step increment's wrapped scalar.
int64_t GroupTemporaries(Implementation implementation, const std::vector<size_t>& group) {
  const std::vector<int64_t> bytes = Bytes();
  const int64_t scalar = kWrappedScalarBytes + kCastScalarBytes;
  switch (implementation) {
    case Implementation::kForLoop: {
      int64_t highest = 0;
      for (size_t k = 0; k < group.size(); ++k) {
        const int64_t previous = k > 0 ? bytes[group[k - 1]] : 0;
        highest = std::max(highest, previous + 2 * bytes[group[k]] + scalar);
      }
      return highest;
    }
    case Implementation::kForeach: {
      int64_t sum = 0;
      for (const size_t i : group) sum += bytes[i];
      return sum + scalar;
    }
    case Implementation::kFused: return scalar;
  }
  return -1;
}

int64_t GroupStateBytes(const std::vector<size_t>& group) {
  const std::vector<int64_t> bytes = Bytes();
  int64_t sum = 0;
  for (const size_t i : group) sum += 2 * bytes[i] + kStepBytes;
  return sum;
}

int64_t StateBytes() { return GroupStateBytes({0, 1, 2, 3}); }

// A step's peak above what it finds. torch runs _init_group then adam() per group, so at the
// first step group g's temporaries meet the state of groups 0..g only; later, the largest
// group's temporaries.
int64_t ExpectedRise(Implementation implementation, ParamGroups groups, bool first) {
  int64_t state = 0, highest = 0;
  for (const std::vector<size_t>& group : Groups(groups)) {
    if (first) state += GroupStateBytes(group);
    highest = std::max(highest, state + GroupTemporaries(implementation, group));
  }
  return highest;
}

std::string What(Implementation implementation, ParamGroups groups) {
  return std::string(ImplementationName(implementation)) + " " + ParamGroupsName(groups);
}

TEST(TorchAdamWTest, ImplementationNames) {
  for (const Implementation i : kImplementations) {
    EXPECT_EQ(ParseImplementation(ImplementationName(i)), i);
  }
  EXPECT_FALSE(ParseImplementation("fused-adam").has_value());
  for (const ParamGroups g : kGroupings) EXPECT_EQ(ParseParamGroups(ParamGroupsName(g)), g);
  EXPECT_FALSE(ParseParamGroups("none").has_value());
}

// exp_avg + exp_avg_sq (8 bytes per fp32 element) and a 4-byte step per tensor, made at the
// first step; a tensor without a gradient gets none.
TEST(TorchAdamWTest, StateIsTwoMomentsAndAStepPerTensor) {
  for (const Implementation implementation : kImplementations) {
    std::vector<at::Tensor> tensors = MakeTensors();
    at::Tensor frozen = at::randn({100, 10});  // no gradient: no state
    tensors.push_back(frozen);
    TorchAdamW optimizer(tensors, implementation, ParamGroups::kTrainer);
    EXPECT_TRUE(optimizer.StateTensors().empty());
    const int64_t before = Tracker().AllocatedBytes();
    optimizer.Step(Spec(1));
    const int64_t held = Tracker().AllocatedBytes() - before;
    const int64_t state = memory::DistinctStorageBytes(optimizer.StateTensors());
    std::printf("%-8s state %lld bytes (4 tensors, 20,911 elements)\n",
                ImplementationName(implementation), static_cast<long long>(state));
    EXPECT_EQ(state, StateBytes()) << ImplementationName(implementation);
    EXPECT_EQ(held, StateBytes()) << ImplementationName(implementation);
  }
}

TEST(TorchAdamWTest, StepPeakIsStatePlusTheImplementationsTemporaries) {
  for (const ParamGroups groups : kGroupings) {
    for (const Implementation implementation : kImplementations) {
      const std::vector<at::Tensor> tensors = MakeTensors();
      TorchAdamW optimizer(tensors, implementation, groups);
      const int64_t first = StepPeakRise(optimizer, 1);
      const int64_t second = StepPeakRise(optimizer, 2);
      const std::string what = What(implementation, groups);
      std::printf("%-16s step peak above what it finds: first %lld, second %lld bytes\n",
                  what.c_str(), static_cast<long long>(first), static_cast<long long>(second));
      EXPECT_EQ(first, ExpectedRise(implementation, groups, true)) << what;
      EXPECT_EQ(second, ExpectedRise(implementation, groups, false)) << what;
    }
  }
}

// The Trainer's groups: the 2+-dim tensors decay, the 1-D one does not — each tensor ends where
// a single group with (2+ dims) or without (1-D) weight decay takes it, bit for bit.
TEST(TorchAdamWTest, TrainerGroupsDecayOnlyTensorsOfTwoOrMoreDims) {
  for (const Implementation implementation : kImplementations) {
    const auto run = [&](ParamGroups groups, double weight_decay) {
      std::vector<at::Tensor> tensors = MakeTensors();
      TorchAdamW optimizer(tensors, implementation, groups);
      for (int64_t step = 1; step <= 3; ++step) {
        OptimizerStepSpec spec = Spec(step);
        spec.weight_decay = weight_decay;
        optimizer.Step(spec);
      }
      return tensors;
    };
    const std::vector<at::Tensor> trainer = run(ParamGroups::kTrainer, 0.1);
    const std::vector<at::Tensor> decayed = run(ParamGroups::kSingle, 0.1);
    const std::vector<at::Tensor> undecayed = run(ParamGroups::kSingle, 0.0);
    for (size_t i = 0; i < kShapes.size(); ++i) {
      const at::Tensor& expected = kShapes[i].size() >= 2 ? decayed[i] : undecayed[i];
      EXPECT_TRUE(at::equal(trainer[i].detach(), expected.detach()))
          << ImplementationName(implementation) << " tensor " << i;
      EXPECT_FALSE(at::equal(decayed[i].detach(), undecayed[i].detach())) << i;
    }
  }
}

// The same steps on meta tensors (the estimate's device): the same state and temporaries, less
// the 0-dim casts TensorIterator makes only on the CPU; for fused, the kernel LibTorch has no
// meta kernel for is skipped (it allocates nothing).
TEST(TorchAdamWTest, MetaStepsAllocateWhatTheCpuStepsDo) {
  memory::InstallMetaTracking();
  for (const ParamGroups groups : kGroupings) {
    for (const Implementation implementation : kImplementations) {
      std::vector<int64_t> rises[2];
      for (const c10::Device device : {c10::Device(c10::kCPU), c10::Device(c10::kMeta)}) {
        const std::vector<at::Tensor> tensors = MakeTensors(device);
        TorchAdamW optimizer(tensors, implementation, groups);
        for (int64_t step = 1; step <= 2; ++step) {
          rises[device.is_meta()].push_back(StepPeakRise(optimizer, step));
        }
        EXPECT_EQ(memory::DistinctStorageBytes(optimizer.StateTensors()), StateBytes());
      }
      const std::string what = What(implementation, groups);
      for (size_t s = 0; s < 2; ++s) {
        std::printf("%-16s step %zu: cpu %lld, meta %lld bytes\n", what.c_str(), s + 1,
                    static_cast<long long>(rises[0][s]), static_cast<long long>(rises[1][s]));
        EXPECT_EQ(rises[1][s], rises[0][s] - kCastScalarBytes) << what;
      }
    }
  }
}

// Why the fused step skips its kernel on meta tensors: LibTorch registers none for the meta
// device (torch's Python does, in torch/_meta_registrations.py). Should one appear, call it.
TEST(TorchAdamWTest, LibTorchHasNoMetaKernelForFusedAdamW) {
  const at::Tensor p = at::empty({8}, at::device(c10::kMeta));
  const at::Tensor step = at::zeros({}, at::device(c10::kMeta));
  EXPECT_THROW(at::_fused_adamw_({p}, {p}, {p}, {p}, {}, {step}, 1e-3, 0.9, 0.999, 0.0, 1e-8,
                                 false, false),
               c10::Error);
}

// A tiny cell per implementation and grouping: the run, and its estimate (the loop on meta
// tensors).
TEST(TorchAdamWTest, EstimateEqualsTheMeasuredRun) {
  for (const ParamGroups groups : kGroupings) {
    for (const Implementation implementation : kImplementations) {
      const config::RunConfig cfg = testing_support::TinyRun(
          3, {"strategies.optimizer.plugin=\"torch_adamw\"",
              std::string("strategies.optimizer.implementation=\"") +
                  ImplementationName(implementation) + "\"",
              std::string("strategies.optimizer.param_groups=\"") + ParamGroupsName(groups) +
                  "\""});
      const std::string what = What(implementation, groups);
      const train::RunResult measured = testing_support::Train(cfg);
      ASSERT_EQ(measured.status, train::RunStatus::kOk) << what << ": " << measured.error;
      const estimate::CellEstimate e = estimate::EstimateRun(cfg);
      ASSERT_EQ(e.status, estimate::EstimateStatus::kEstimated) << what << ": " << e.message;
      const train::MemoryBreakdown& m = measured.memory;
      const train::MemoryBreakdown& x = e.run.memory;
      std::printf("%-16s peak %lld measured, %lld estimated; optimizer_step %lld, %lld; "
                  "optimizer state %lld, %lld\n",
                  what.c_str(), static_cast<long long>(m.peak_allocated_bytes),
                  static_cast<long long>(x.peak_allocated_bytes),
                  static_cast<long long>(m.phases[2].peak_bytes),
                  static_cast<long long>(x.phases[2].peak_bytes),
                  static_cast<long long>(m.optimizer_bytes),
                  static_cast<long long>(x.optimizer_bytes));
      EXPECT_EQ(x.peak_allocated_bytes, m.peak_allocated_bytes) << what;
      EXPECT_EQ(x.optimizer_bytes, m.optimizer_bytes) << what;
      // The optimizer step's own peak: on meta tensors without the 0-dim cast of a wrapped
      // scalar that TensorIterator makes on the CPU (MetaStepsAllocateWhatTheCpuStepsDo).
      EXPECT_LE(x.phases[2].peak_bytes, m.phases[2].peak_bytes) << what;
      EXPECT_GE(x.phases[2].peak_bytes, m.phases[2].peak_bytes - kCastScalarBytes) << what;
    }
  }
}

// An unknown grouping is refused with the names to write instead.
TEST(TorchAdamWTest, RefusesAnUnknownParamGroups) {
  try {
    testing_support::TinyRun(1, {"strategies.optimizer.plugin=\"torch_adamw\"",
                                 "strategies.optimizer.param_groups=\"decay\""});
    FAIL() << "param_groups = \"decay\" was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("use \"trainer\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace memsweep::torch_adamw_test
