// optimizer/torch_adamw: its state and its step's peak to the byte, from the tensors' shapes, per
// implementation, as memsweep's tracking allocator counts them; the estimate (the step on meta
// tensors) against the measured run of a tiny cell.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "core/estimate/cell_estimate.h"
#include "core/memory/meta_tracking.h"
#include "core/memory/storage_bytes.h"
#include "core/memory/tracking_allocator.h"
#include "optimizer/torch_adamw/torch_adamw.h"
#include "support/run_configs.h"

namespace memsweep::torch_adamw_test {
namespace {

using plugins::torch_adamw::Implementation;
using plugins::torch_adamw::ImplementationName;
using plugins::torch_adamw::ParseImplementation;
using plugins::torch_adamw::TorchAdamW;

constexpr Implementation kImplementations[] = {Implementation::kForLoop,
                                               Implementation::kForeach, Implementation::kFused};

// A Python number (or a C++ Scalar) handed to an op that takes a tensor becomes a 0-dim tensor:
// double or int64, 8 bytes; on the CPU TensorIterator casts it to the other operand's dtype,
// another 0-dim tensor (4 bytes for float32). Both live while the op runs.
constexpr int64_t kWrappedScalarBytes = 8;
constexpr int64_t kCastScalarBytes = 4;
constexpr int64_t kStepBytes = 4;  // each tensor's `step`: a 0-dim float32 tensor

memory::TrackingAllocator& Tracker() { return memory::TrackingAllocator::Instance(); }

// Tensors of known shapes (the largest last, after a smaller one), each with a gradient.
const std::vector<std::vector<int64_t>> kShapes = {{64, 48}, {1000}, {7, 13, 5}, {256, 64}};

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

OptimizerStepSpec Spec(int64_t step) {
  OptimizerStepSpec spec;
  spec.lr = 1e-2;
  spec.beta1 = 0.9;
  spec.beta2 = 0.999;
  spec.eps = 1e-8;
  spec.weight_decay = 0.1;
  spec.step = step;
  return spec;
}

// What one Step adds above the bytes held before it, at its highest.
int64_t StepPeakRise(TorchAdamW& optimizer, int64_t step) {
  const int64_t before = Tracker().AllocatedBytes();
  Tracker().ResetWindowPeak();
  optimizer.Step(Spec(step));
  return Tracker().WindowPeakBytes() - before;
}

// The temporaries of one step at their highest, by hand from the shapes:
//   for-loop: tensor i's square root and quotient (exp_avg_sq.sqrt() / bias_correction2_sqrt,
//             the divisor a wrapped scalar, cast) while tensor i-1's denominator is still held;
//   foreach:  the group's list of square roots, during a _foreach_div_ by a wrapped scalar;
//   fused:    none but a step increment's wrapped scalar.
int64_t Temporaries(Implementation implementation) {
  const std::vector<int64_t> bytes = Bytes();
  const int64_t scalar = kWrappedScalarBytes + kCastScalarBytes;
  switch (implementation) {
    case Implementation::kForLoop: {
      int64_t highest = 0;
      for (size_t i = 0; i < bytes.size(); ++i) {
        highest = std::max(highest, (i > 0 ? bytes[i - 1] : 0) + 2 * bytes[i] + scalar);
      }
      return highest;
    }
    case Implementation::kForeach:
      return std::accumulate(bytes.begin(), bytes.end(), int64_t{0}) + scalar;
    case Implementation::kFused: return scalar;
  }
  return -1;
}

int64_t StateBytes() {
  const std::vector<int64_t> bytes = Bytes();
  return 2 * std::accumulate(bytes.begin(), bytes.end(), int64_t{0}) +
         kStepBytes * static_cast<int64_t>(bytes.size());
}

TEST(TorchAdamWTest, ImplementationNames) {
  for (const Implementation i : kImplementations) {
    EXPECT_EQ(ParseImplementation(ImplementationName(i)), i);
  }
  EXPECT_FALSE(ParseImplementation("fused-adam").has_value());
}

// exp_avg + exp_avg_sq (8 bytes per fp32 element) and a 4-byte step per tensor, made at the
// first step; a tensor without a gradient gets none.
TEST(TorchAdamWTest, StateIsTwoMomentsAndAStepPerTensor) {
  for (const Implementation implementation : kImplementations) {
    std::vector<at::Tensor> tensors = MakeTensors();
    at::Tensor frozen = at::randn({100, 10});  // no gradient: no state
    tensors.push_back(frozen);
    TorchAdamW optimizer(tensors, implementation);
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
  for (const Implementation implementation : kImplementations) {
    const std::vector<at::Tensor> tensors = MakeTensors();
    TorchAdamW optimizer(tensors, implementation);
    const int64_t first = StepPeakRise(optimizer, 1);
    const int64_t second = StepPeakRise(optimizer, 2);
    std::printf("%-8s step peak above what it finds: first %lld, second %lld bytes\n",
                ImplementationName(implementation), static_cast<long long>(first),
                static_cast<long long>(second));
    EXPECT_EQ(first, StateBytes() + Temporaries(implementation))
        << ImplementationName(implementation);
    EXPECT_EQ(second, Temporaries(implementation)) << ImplementationName(implementation);
  }
}

// The same steps on meta tensors (the estimate's device): the same state and temporaries, less
// the 0-dim casts TensorIterator makes only on the CPU; for fused, the kernel LibTorch has no
// meta kernel for is skipped (it allocates nothing).
TEST(TorchAdamWTest, MetaStepsAllocateWhatTheCpuStepsDo) {
  memory::InstallMetaTracking();
  for (const Implementation implementation : kImplementations) {
    std::vector<int64_t> rises[2];
    for (const c10::Device device : {c10::Device(c10::kCPU), c10::Device(c10::kMeta)}) {
      const std::vector<at::Tensor> tensors = MakeTensors(device);
      TorchAdamW optimizer(tensors, implementation);
      for (int64_t step = 1; step <= 2; ++step) {
        rises[device.is_meta()].push_back(StepPeakRise(optimizer, step));
      }
      EXPECT_EQ(memory::DistinctStorageBytes(optimizer.StateTensors()), StateBytes());
    }
    for (size_t s = 0; s < 2; ++s) {
      std::printf("%-8s step %zu: cpu %lld, meta %lld bytes\n", ImplementationName(implementation),
                  s + 1, static_cast<long long>(rises[0][s]),
                  static_cast<long long>(rises[1][s]));
      EXPECT_EQ(rises[1][s], rises[0][s] - kCastScalarBytes) << ImplementationName(implementation);
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

// A tiny cell per implementation: the run, and its estimate (the loop on meta tensors).
TEST(TorchAdamWTest, EstimateEqualsTheMeasuredRun) {
  for (const Implementation implementation : kImplementations) {
    const config::RunConfig cfg = testing_support::TinyRun(
        3, {"strategies.optimizer.plugin=\"torch_adamw\"",
            std::string("strategies.optimizer.implementation=\"") +
                ImplementationName(implementation) + "\""});
    const train::RunResult measured = testing_support::Train(cfg);
    ASSERT_EQ(measured.status, train::RunStatus::kOk) << measured.error;
    const estimate::CellEstimate e = estimate::EstimateRun(cfg);
    ASSERT_EQ(e.status, estimate::EstimateStatus::kEstimated) << e.message;
    const train::MemoryBreakdown& m = measured.memory;
    const train::MemoryBreakdown& x = e.run.memory;
    std::printf("%-8s peak %lld measured, %lld estimated; optimizer_step %lld, %lld; "
                "optimizer state %lld, %lld\n",
                ImplementationName(implementation), static_cast<long long>(m.peak_allocated_bytes),
                static_cast<long long>(x.peak_allocated_bytes),
                static_cast<long long>(m.phases[2].peak_bytes),
                static_cast<long long>(x.phases[2].peak_bytes),
                static_cast<long long>(m.optimizer_bytes), static_cast<long long>(x.optimizer_bytes));
    EXPECT_EQ(x.peak_allocated_bytes, m.peak_allocated_bytes) << ImplementationName(implementation);
    EXPECT_EQ(x.optimizer_bytes, m.optimizer_bytes) << ImplementationName(implementation);
    // The optimizer step's own peak: on meta tensors without the 0-dim cast of a wrapped
    // scalar that TensorIterator makes on the CPU (MetaStepsAllocateWhatTheCpuStepsDo).
    EXPECT_LE(x.phases[2].peak_bytes, m.phases[2].peak_bytes) << ImplementationName(implementation);
    EXPECT_GE(x.phases[2].peak_bytes, m.phases[2].peak_bytes - kCastScalarBytes)
        << ImplementationName(implementation);
  }
}

}  // namespace
}  // namespace memsweep::torch_adamw_test
