// optimizer/adafactor (plugins/optimizer/adafactor/adafactor.h): its state is the formula's bytes
// (rows + columns for tensors of 2+ dims, the full tensor for 1-D ones, exp_avg with
// first_moment, a 0-d RMS each), one Step's peak is that state plus the temporaries counted by
// hand, and the estimate (the loop on meta tensors) equals a measured tiny run. Its values
// against transformers: adafactor_reference_test.cc.
#include "optimizer/adafactor/adafactor.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "core/estimate/cell_estimate.h"
#include "core/memory/tracking_allocator.h"
#include "support/run_configs.h"

namespace memsweep::adafactor_test {
namespace {

using plugins::optimizer::Adafactor;
using plugins::optimizer::AdafactorGroups;
using plugins::optimizer::AdafactorOptions;

constexpr int64_t kFloat = 4;  // bytes of an fp32 element

// The Trainer's settings (optim="adafactor"): the learning rate is a number, not a 0-d tensor.
AdafactorOptions TrainerSettings() {
  AdafactorOptions o;
  o.relative_step = false;
  o.scale_parameter = false;
  o.groups = AdafactorGroups::kSingle;
  return o;
}

OptimizerStepSpec Spec(int64_t step) {
  OptimizerStepSpec spec;
  spec.lr = 1e-3;
  spec.weight_decay = 0.0;
  spec.step = step;
  return spec;
}

// fp32 tensors of these shapes, each with a gradient.
std::vector<at::Tensor> TensorsWithGradients(const std::vector<std::vector<int64_t>>& shapes) {
  at::manual_seed(3);
  std::vector<at::Tensor> tensors;
  for (const std::vector<int64_t>& shape : shapes) {
    at::Tensor t = at::randn(shape).set_requires_grad(true);
    t.mutable_grad() = at::randn(shape);
    tensors.push_back(t);
  }
  return tensors;
}

int64_t Bytes(const std::vector<at::Tensor>& tensors) {
  int64_t bytes = 0;
  for (const at::Tensor& t : tensors) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

// The state's bytes by the formula: per tensor, rows (shape[:-1]) + columns (shape[:-2] +
// shape[-1:]) for 2+ dims or the full tensor, the full tensor again with first_moment, and RMS.
int64_t StateFormula(const std::vector<std::vector<int64_t>>& shapes, bool first_moment) {
  int64_t bytes = 0;
  for (const std::vector<int64_t>& shape : shapes) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    if (shape.size() >= 2) {
      const int64_t rows = numel / shape.back();
      const int64_t cols = numel / shape[shape.size() - 2];
      bytes += (rows + cols) * kFloat;
    } else {
      bytes += numel * kFloat;
    }
    if (first_moment) bytes += numel * kFloat;
    bytes += kFloat;  // RMS: transformers keeps _rms()'s 0-d tensor
  }
  return bytes;
}

TEST(AdafactorTest, StateBytesEqualTheFormula) {
  ASSERT_TRUE(memory::TrackingAllocator::Installed());
  memory::TrackingAllocator& tracker = memory::TrackingAllocator::Instance();
  const std::vector<std::vector<int64_t>> shapes = {{64, 32}, {32}, {4, 16, 8}, {1, 50}};
  for (const bool first_moment : {false, true}) {
    std::vector<at::Tensor> tensors = TensorsWithGradients(shapes);
    AdafactorOptions options;  // transformers' defaults
    options.first_moment = first_moment;
    Adafactor optimizer(tensors, options);
    const int64_t before = tracker.AllocatedBytes();
    optimizer.Step(Spec(1));
    const int64_t held = tracker.AllocatedBytes() - before;  // every temporary is gone
    const int64_t formula = StateFormula(shapes, first_moment);
    std::printf("first_moment %d: state %lld bytes (formula %lld), held after the step %lld\n",
                first_moment, static_cast<long long>(Bytes(optimizer.StateTensors())),
                static_cast<long long>(formula), static_cast<long long>(held));
    EXPECT_EQ(Bytes(optimizer.StateTensors()), formula);
    EXPECT_EQ(held, formula);
    EXPECT_EQ(optimizer.State(2).exp_avg_sq_row.sizes(), at::IntArrayRef({4, 16}));
    EXPECT_EQ(optimizer.State(2).exp_avg_sq_col.sizes(), at::IntArrayRef({4, 8}));
  }
}

// The peak of the second Step above what was held before it (tensors, gradients, state).
int64_t SecondStepPeak(std::vector<at::Tensor> tensors, const AdafactorOptions& options) {
  memory::TrackingAllocator& tracker = memory::TrackingAllocator::Instance();
  Adafactor optimizer(std::move(tensors), options);
  optimizer.Step(Spec(1));
  const int64_t before = tracker.AllocatedBytes();
  tracker.ResetWindowPeak();
  optimizer.Step(Spec(2));
  return tracker.WindowPeakBytes() - before;
}

// The largest moment of a factored tensor's turn: the update (grad² + eps1, full) is still held
// while _approx_sq_grad makes the row factor, the column factor and their product (full).
TEST(AdafactorTest, StepPeakIsTheFactoredProductBesideTheUpdate) {
  ASSERT_TRUE(memory::TrackingAllocator::Installed());
  const int64_t full = 64 * 32 * kFloat, rows = 64 * kFloat, cols = 32 * kFloat;
  const int64_t peak = SecondStepPeak(TensorsWithGradients({{64, 32}, {32}}), TrainerSettings());
  std::printf("[64, 32] + [32]: step peak %lld bytes above the state, by hand %lld\n",
              static_cast<long long>(peak), static_cast<long long>(2 * full + rows + cols));
  EXPECT_EQ(peak, 2 * full + rows + cols);
}

// A tensor's update outlives its turn (a local of step(), dropped when the next tensor's
// update is assigned): the next tensor's grad² and grad² + eps1 are made beside it. The scalar
// eps1 becomes a wrapped fp64 tensor (8 bytes) cast to fp32 (4 bytes), alive while add's output
// is made.
TEST(AdafactorTest, StepPeakHoldsThePreviousTensorsUpdate) {
  ASSERT_TRUE(memory::TrackingAllocator::Installed());
  const int64_t previous = 16 * 8 * kFloat, full = 4096 * kFloat, scalar = 8 + 4;
  const int64_t peak = SecondStepPeak(TensorsWithGradients({{16, 8}, {4096}}), TrainerSettings());
  std::printf("[16, 8] + [4096]: step peak %lld bytes above the state, by hand %lld\n",
              static_cast<long long>(peak), static_cast<long long>(previous + 2 * full + scalar));
  EXPECT_EQ(peak, previous + 2 * full + scalar);
}

// The Trainer's groups: tensors of 2+ dims first, then 1-D ones, and weight decay on the first.
TEST(AdafactorTest, TrainerGroupsUpdateWeightsFirstAndDecayOnlyThem) {
  std::vector<at::Tensor> grouped = TensorsWithGradients({{32}, {8, 4}});
  std::vector<at::Tensor> plain = TensorsWithGradients({{32}, {8, 4}});
  AdafactorOptions options = TrainerSettings();
  options.groups = AdafactorGroups::kTrainer;
  Adafactor trainer(grouped, options);
  Adafactor single(plain, TrainerSettings());
  OptimizerStepSpec spec = Spec(1);
  spec.weight_decay = 0.1;
  trainer.Step(spec);
  single.Step(spec);
  EXPECT_TRUE(at::equal(grouped[1], plain[1])) << "the weight decays in both";
  EXPECT_FALSE(at::equal(grouped[0], plain[0])) << "the 1-D tensor decays only in one group";
}

TEST(AdafactorTest, RefusesWhatTransformersRefuses) {
  AdafactorOptions options;
  options.relative_step = false;
  options.warmup_init = true;
  EXPECT_THROW(Adafactor({}, options), std::invalid_argument);
  options = AdafactorOptions();
  options.clip_threshold = 0;
  EXPECT_THROW(Adafactor({}, options), std::invalid_argument);
}

// A tiny cell, with transformers' defaults and with the Trainer's settings plus beta1: the run,
// and its estimate (the loop on meta tensors).
TEST(AdafactorTest, EstimateEqualsTheMeasuredRun) {
  const std::vector<std::vector<std::string>> settings = {
      {},
      {"strategies.optimizer.relative_step=false", "strategies.optimizer.scale_parameter=false",
       "strategies.optimizer.first_moment=true"}};
  for (std::vector<std::string> overrides : settings) {
    overrides.push_back("strategies.optimizer.plugin=\"adafactor\"");
    const config::RunConfig cfg = testing_support::TinyRun(3, overrides);
    const train::RunResult measured = testing_support::Train(cfg);
    ASSERT_EQ(measured.status, train::RunStatus::kOk) << measured.error;
    const estimate::CellEstimate e = estimate::EstimateRun(cfg);
    ASSERT_EQ(e.status, estimate::EstimateStatus::kEstimated) << e.message;
    const train::MemoryBreakdown& m = measured.memory;
    const train::MemoryBreakdown& x = e.run.memory;
    std::printf("peak %lld measured, %lld estimated; optimizer_step %lld, %lld; "
                "optimizer state %lld, %lld\n",
                static_cast<long long>(m.peak_allocated_bytes),
                static_cast<long long>(x.peak_allocated_bytes),
                static_cast<long long>(m.phases[2].peak_bytes),
                static_cast<long long>(x.phases[2].peak_bytes),
                static_cast<long long>(m.optimizer_bytes), static_cast<long long>(x.optimizer_bytes));
    EXPECT_EQ(x.peak_allocated_bytes, m.peak_allocated_bytes);
    EXPECT_EQ(x.optimizer_bytes, m.optimizer_bytes);
    EXPECT_EQ(x.phases[2].peak_bytes, m.phases[2].peak_bytes);
  }
}

}  // namespace
}  // namespace memsweep::adafactor_test
