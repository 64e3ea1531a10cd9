// optimizer/adafactor on a CUDA device (skipped, saying why, without one): the same steps on the
// same tensors as on the CPU, to fp32 rounding (CUDA's reductions sum in another order), with
// the same state; and a tiny cell trains on cuda:0 with the CPU run's optimizer state bytes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "gpu/gpu_test_support.h"
#include "optimizer/adafactor/adafactor.h"

namespace memsweep::adafactor_cuda_test {
namespace {

using plugins::optimizer::Adafactor;
using plugins::optimizer::AdafactorOptions;

class AdafactorCudaTest : public testing_support::GpuTest {};

TEST_F(AdafactorCudaTest, StepsFollowTheCpuSteps) {
  const std::vector<std::vector<int64_t>> shapes = {{64, 48}, {48}, {4, 16, 8}};
  for (const bool first_moment : {false, true}) {
    AdafactorOptions options;
    options.first_moment = first_moment;
    at::manual_seed(11);
    std::vector<at::Tensor> cpu, cuda, grads;
    for (const std::vector<int64_t>& shape : shapes) {
      cpu.push_back(at::randn(shape).mul_(0.05).set_requires_grad(true));
      cuda.push_back(cpu.back().detach().to(at::kCUDA).set_requires_grad(true));
    }
    Adafactor on_cpu(cpu, options), on_cuda(cuda, options);
    OptimizerStepSpec spec;
    spec.beta1 = 0.9;
    spec.weight_decay = 0.1;
    for (int64_t step = 1; step <= 3; ++step) {
      for (size_t k = 0; k < shapes.size(); ++k) {
        const at::Tensor g = at::randn(shapes[k]).mul_(0.01);
        cpu[k].mutable_grad() = g;
        cuda[k].mutable_grad() = g.to(at::kCUDA);
      }
      spec.step = step;
      on_cpu.Step(spec);
      on_cuda.Step(spec);
    }
    for (size_t k = 0; k < shapes.size(); ++k) {
      EXPECT_TRUE(at::allclose(cuda[k].detach().cpu(), cpu[k].detach(), 1e-5, 1e-7))
          << "tensor " << k << (first_moment ? " with first_moment" : "");
    }
    ASSERT_EQ(on_cuda.StateTensors().size(), on_cpu.StateTensors().size());
    for (size_t i = 0; i < on_cpu.StateTensors().size(); ++i) {
      EXPECT_TRUE(on_cuda.StateTensors()[i].is_cuda());
      EXPECT_EQ(on_cuda.StateTensors()[i].sizes(), on_cpu.StateTensors()[i].sizes());
    }
  }
}

TEST_F(AdafactorCudaTest, TinyCellTrainsWithTheCpuRunsState) {
  const std::vector<std::string> overrides = {"strategies.optimizer.plugin=\"adafactor\""};
  const train::RunResult gpu = testing_support::Train(testing_support::GpuRun(3, overrides));
  ASSERT_EQ(gpu.status, train::RunStatus::kOk) << gpu.error;
  const train::RunResult cpu = testing_support::Train(testing_support::CpuRun(3, overrides));
  ASSERT_EQ(cpu.status, train::RunStatus::kOk) << cpu.error;
  EXPECT_EQ(gpu.memory.optimizer_bytes, cpu.memory.optimizer_bytes);
  testing_support::ExpectLossesClose(gpu, cpu, testing_support::SameArithmetic(
                                                   testing_support::CpuRun(3, overrides)));
}

}  // namespace
}  // namespace memsweep::adafactor_cuda_test
