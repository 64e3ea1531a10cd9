// What a callback sees of the gradients the update uses (RunContext::optimizer_parameters and
// grad_norm, memsweep/strategy.h): at optimizer_step's begin hook the updated tensors' .grad —
// the model's parameters in fp32, the fp32 masters under precision/bf16, whose begin hook has
// moved them off the bf16 parameters — give the same norm the update reports, and the end hook
// sees that norm.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/config/strategy_resolver.h"
#include "core/train/trainer.h"
#include "memsweep/strategy.h"
#include "support/run_configs.h"

namespace memsweep::train {
namespace {

struct GradientReader : CallbackStrategy {
  void OnStageBegin(Stage stage, RunContext& context) override {
    if (stage != Stage::kOptimizerStep) return;
    ASSERT_NE(context.optimizer_parameters, nullptr);
    double squares = 0;
    int64_t with_grad = 0, model_grads = 0;
    for (const at::Tensor& t : *context.optimizer_parameters) {
      if (!t.grad().defined()) continue;
      ++with_grad;
      squares += t.grad().to(at::kDouble).pow(2).sum().item<double>();
    }
    for (const at::Tensor& p : context.model->Parameters()) model_grads += p.grad().defined();
    begin_norms.push_back(std::sqrt(squares));
    tensors_with_grad.push_back(with_grad);
    model_parameters_with_grad.push_back(model_grads);
    norm_at_begin.push_back(context.grad_norm);
  }
  void OnStageEnd(Stage stage, RunContext& context) override {
    if (stage == Stage::kOptimizerStep) end_norms.push_back(context.grad_norm);
  }
  std::vector<double> begin_norms, end_norms, norm_at_begin;
  std::vector<int64_t> tensors_with_grad, model_parameters_with_grad;
};

void ExpectCallbackSeesTheUpdatesGradients(const std::vector<std::string>& overrides,
                                           bool masters) {
  const config::RunConfig cfg = testing_support::TinyRun(3, overrides);
  StrategySet set = config::InstantiateStrategies(cfg);
  auto reader = std::make_shared<GradientReader>();
  set.push_back({"callbacks", "gradient-reader", "1", reader});
  const RunResult result = Trainer(cfg, std::move(set)).Run();
  ASSERT_EQ(result.status, RunStatus::kOk) << result.error;
  ASSERT_EQ(result.steps.size(), 3u);
  ASSERT_EQ(reader->begin_norms.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const double reported = result.steps[i].grad_norm;
    // Both are the L2 norm of the same fp32 gradients: the update sums in fp32, the callback
    // in double, so they agree to fp32 rounding of a sum over ~10^5 squares.
    EXPECT_NEAR(reader->begin_norms[i], reported, 1e-5 * reported) << "step " << i;
    EXPECT_EQ(reader->end_norms[i], reported) << "step " << i;
    EXPECT_TRUE(std::isnan(reader->norm_at_begin[i])) << "step " << i;
    EXPECT_GT(reader->tensors_with_grad[i], 0);
    // Under precision/bf16 the gradients have left the bf16 parameters for the masters.
    if (masters) EXPECT_EQ(reader->model_parameters_with_grad[i], 0) << "step " << i;
  }
}

TEST(CallbackGradients, Fp32CallbacksReadTheGradientsAndNormTheUpdateUses) {
  ExpectCallbackSeesTheUpdatesGradients({}, false);
}

TEST(CallbackGradients, UnderBf16CallbacksReadTheMastersGradients) {
  ExpectCallbackSeesTheUpdatesGradients({"strategies.precision.plugin=bf16"}, true);
}

}  // namespace
}  // namespace memsweep::train
