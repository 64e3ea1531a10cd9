// optimizer/adamw: memsweep's AdamW — decoupled weight decay, both moments in fp32, updated in
// one fused pass per tensor that allocates no temporaries (memsweep/adamw_update.h). The same
// peak as torch.optim.AdamW(fused=True), transformers' default optimizer ("adamw_torch_fused").
// The [optimizer] table's lr schedule, betas, eps and weight_decay drive it.
#include <ATen/ATen.h>
#include <torch/utils.h>

#include "memsweep/adamw_update.h"
#include "memsweep/allocation_label.h"
#include "memsweep/plugin.h"

namespace {

class AdamWState final : public memsweep::Optimizer {
 public:
  explicit AdamWState(std::vector<at::Tensor> tensors)
      : tensors_(std::move(tensors)), exp_avg_(tensors_.size()), exp_avg_sq_(tensors_.size()) {}

  void Step(const memsweep::OptimizerStepSpec& spec) override {
    torch::NoGradGuard no_grad;
    const memsweep::AdamWHyperparameters h{spec.lr, spec.beta1, spec.beta2, spec.eps,
                                           spec.weight_decay};
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const at::Tensor& p = tensors_[i];
      const at::Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      if (!exp_avg_[i].defined()) {  // created at the first update, as torch's AdamW does
        memsweep::memory::AllocationLabel label("optimizer state");
        exp_avg_[i] = at::zeros_like(p, at::MemoryFormat::Contiguous);
        exp_avg_sq_[i] = at::zeros_like(p, at::MemoryFormat::Contiguous);
      }
      memsweep::AdamWUpdate(p, grad, exp_avg_[i], exp_avg_sq_[i], h, spec.step);
    }
  }

  std::vector<at::Tensor> StateTensors() const override {
    std::vector<at::Tensor> state;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      if (exp_avg_[i].defined()) state.push_back(exp_avg_[i]);
      if (exp_avg_sq_[i].defined()) state.push_back(exp_avg_sq_[i]);
    }
    return state;
  }

 private:
  std::vector<at::Tensor> tensors_;
  std::vector<at::Tensor> exp_avg_, exp_avg_sq_;
};

class AdamW final : public memsweep::OptimizerStrategy {
 public:
  explicit AdamW(const memsweep::PluginParams&) {}
  // Math-preserving: the reference update every other optimizer is verified against.
  bool MathPreserving() const override { return true; }
  std::unique_ptr<memsweep::Optimizer> MakeOptimizer(
      const std::vector<at::Tensor>& tensors) override {
    return std::make_unique<AdamWState>(tensors);
  }
  // No stage hooks: the host calls Step in the optimizer_step stage.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(AdamW, "adamw", "optimizer", "1.0.0",
                "memsweep's AdamW: fp32 moments, one fused pass per tensor, no temporaries",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/1)
