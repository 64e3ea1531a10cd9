// attention/sdpa's CUDA kernels named one by one — flash, efficient (memory-efficient), cuDNN,
// math — and `auto`, on the same bf16 inputs: outputs and input gradients agree with the fp32
// math kernel within bf16 rounding: the inputs are bf16 and each kernel rounds what it stores to
// bf16 (u = 2^-8). The longest chain of stored roundings, in the backward for dq, is scores,
// probabilities, dP, dS and dq: 5u of the values' scale, with fp32 (or, for cuBLAS's
// reduced-precision bf16 reductions, bf16) partial sums: 8u allowed (normwise, of the largest
// reference value). A modelled bound, not the componentwise one of the CPU attention tests
// (attention_test_support.h), which assumes fp32 accumulation.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "attention/sdpa/sdpa_attention.h"
#include "gpu/gpu_test_support.h"
#include "support/tolerances.h"

namespace memsweep::testing_support {
namespace {

using plugins::SdpaAttention;
using plugins::SdpaBackend;

class GpuSdpa : public GpuTest {};

struct Outputs {
  at::Tensor out, dq, dk, dv;
};

Outputs RunKernel(SdpaBackend backend, const at::Tensor& q0, const at::Tensor& k0, const at::Tensor& v0,
            const at::Tensor& grad, const model::AttentionInputs& inputs) {
  at::Tensor q = q0.detach().requires_grad_(), k = k0.detach().requires_grad_(),
             v = v0.detach().requires_grad_();
  SdpaAttention attention(backend);
  at::Tensor out = attention(q, k, v, inputs);
  out.backward(grad);
  return {out.detach().to(at::kFloat), q.grad().to(at::kFloat), k.grad().to(at::kFloat),
          v.grad().to(at::kFloat)};
}

void ExpectNear(const at::Tensor& actual, const at::Tensor& expected, const char* what,
                const char* backend) {
  const double scale = expected.abs().max().item<double>();
  const double error = (actual - expected).abs().max().item<double>();
  EXPECT_LE(error, 8 * kBf16Roundoff * std::max(scale, 1e-3)) << what << " of " << backend;
}

TEST_F(GpuSdpa, EveryCudaKernelAgreesWithTheFp32MathKernel) {
  torch::manual_seed(3);
  const auto options = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  // Grouped-query heads (8 query, 2 key/value), head_dim 64, 256 positions.
  const at::Tensor q = at::randn({2, 8, 256, 64}, options), k = at::randn({2, 2, 256, 64}, options),
                   v = at::randn({2, 2, 256, 64}, options);
  const at::Tensor grad = at::randn({2, 8, 256, 64}, options);
  const model::AttentionInputs inputs{
      at::arange(256, options.dtype(at::kLong)).unsqueeze(0).expand({2, 256}), {}};
  const Outputs reference = RunKernel(SdpaBackend::kMath, q.to(at::kFloat), k.to(at::kFloat),
                                v.to(at::kFloat), grad.to(at::kFloat), inputs);
  for (SdpaBackend backend : {SdpaBackend::kFlash, SdpaBackend::kEfficient, SdpaBackend::kCudnn,
                              SdpaBackend::kMath, SdpaBackend::kAuto}) {
    const char* name = plugins::SdpaBackendName(backend);
    const Outputs o = RunKernel(backend, q, k, v, grad, inputs);
    ExpectNear(o.out, reference.out, "output", name);
    ExpectNear(o.dq, reference.dq, "dq", name);
    ExpectNear(o.dk, reference.dk, "dk", name);
    ExpectNear(o.dv, reference.dv, "dv", name);
  }
}

TEST_F(GpuSdpa, TrainingRecordsTheKernelThatRan) {
  const train::RunResult r = Train(GpuRun(2, {"strategies.precision.plugin=\"bf16-autocast\"",
                                              "strategies.attention.plugin=\"sdpa\"",
                                              "strategies.attention.backend=\"flash\""}));
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  EXPECT_GT(r.plugin_metrics.at("sdpa.calls.flash"), 0.0);
  const train::RunResult automatic = Train(GpuRun(2, {"strategies.attention.plugin=\"sdpa\""}));
  ASSERT_EQ(automatic.status, train::RunStatus::kOk) << automatic.error;
  double calls = 0;
  for (const auto& [name, value] : automatic.plugin_metrics) {
    if (name.rfind("sdpa.calls.", 0) == 0 && name != "sdpa.calls.none") calls += value;
  }
  EXPECT_GT(calls, 0.0);
}

}  // namespace
}  // namespace memsweep::testing_support
