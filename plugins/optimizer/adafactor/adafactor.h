// optimizer/adafactor's update: transformers' Adafactor (transformers.optimization.Adafactor,
// 5.23.0) op for op — the same ATen operations in the same order, on the same temporaries, so
// that its values are bitwise those of transformers and its allocations are the ones transformers
// makes, freed where Python frees them (a local of step() lives until it is assigned again, so a
// tensor's update temporary is still alive while the next tensor's first temporaries are made).
//
//   AdafactorOptions options;            // transformers' defaults: relative step, no beta1
//   options.relative_step = false;       // the Trainer's optim="adafactor": spec.lr
//   options.scale_parameter = false;
//   Adafactor optimizer(tensors, options);
//   optimizer.Step(spec);                // each tensor with a .grad(), in place
//
// State per tensor (created at the first step that sees its gradient, as transformers does):
// a tensor of ≥ 2 dims keeps exp_avg_sq_row (shape[:-1]) and exp_avg_sq_col (shape[:-2] +
// shape[-1:]), others exp_avg_sq (full); exp_avg (full) with first_moment; RMS, a 0-d tensor
// (transformers keeps _rms()'s result, a tensor); the step count, a number.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "memsweep/optimizer.h"

namespace memsweep::plugins::optimizer {

// The order tensors are updated in and which get weight decay (the optimizer's param groups).
enum class AdafactorGroups : uint8_t {
  // transformers' Trainer: two groups, tensors of ≥ 2 dims (weight decay) first, then 1-D ones
  // (biases and norms: every 1-D tensor of the models memsweep builds; no weight decay).
  kTrainer,
  // Adafactor(model.parameters()): one group in the model's order, weight decay on every tensor.
  kSingle,
};

// transformers' constructor arguments (their defaults), lr and weight_decay aside: those come
// with every step (OptimizerStepSpec).
struct AdafactorOptions {
  bool first_moment = false;  // beta1 = None; true: exp_avg with the step's beta1
  double decay_rate = -0.8;
  double eps1 = 1e-30, eps2 = 1e-3;  // eps = (eps1, eps2)
  double clip_threshold = 1.0;
  bool relative_step = true;  // lr from the step count (spec.lr unused)
  bool scale_parameter = true;
  bool warmup_init = false;
  AdafactorGroups groups = AdafactorGroups::kTrainer;
};

// Throws std::invalid_argument with what to write instead (warmup_init without relative_step,
// as transformers refuses it; a decay_rate above 0; a negative eps; clip_threshold <= 0).
void CheckAdafactorOptions(const AdafactorOptions& options);

// One tensor's state, as transformers' self.state[p] holds it (undefined where it has none).
struct AdafactorTensorState {
  int64_t step = 0;
  at::Tensor exp_avg, exp_avg_sq_row, exp_avg_sq_col, exp_avg_sq;
  at::Tensor rms;  // 0-d, fp32: the parameter's RMS at the last step
};

class Adafactor final : public memsweep::Optimizer {
 public:
  // `tensors` in the order the update walks them: the host gives them in the order transformers'
  // model.parameters() lists them (an untied LM head last), which the groups keep.
  Adafactor(std::vector<at::Tensor> tensors, AdafactorOptions options);
  // spec.lr (without relative_step), spec.beta1 (with first_moment) and spec.weight_decay are
  // read; on the meta device (the estimate) the value-dependent choices take the usual branch:
  // RMS above eps2 (the learning rate is a 0-d tensor).
  void Step(const OptimizerStepSpec& spec) override;
  std::vector<at::Tensor> StateTensors() const override;
  const AdafactorTensorState& State(size_t i) const { return state_.at(i); }

 private:
  // The locals of transformers' step() that outlive one tensor's turn (assigned anew by the next
  // one): what is alive between tensors, in the order the frame declares them.
  struct Frame {
    at::Tensor grad, p_data_fp32;
    at::Tensor lr_tensor;  // lr when it is RMS · step size (a 0-d tensor) ...
    double lr_value = 0;   // ... or a number
    at::Tensor update;
  };
  void UpdateTensor(size_t i, const OptimizerStepSpec& spec, double weight_decay, Frame& f);
  void SetLr(const AdafactorTensorState& s, const OptimizerStepSpec& spec, Frame& f) const;

  std::vector<at::Tensor> tensors_;
  AdafactorOptions options_;
  std::vector<AdafactorTensorState> state_;
  std::vector<std::vector<size_t>> groups_;  // tensor indices, in update order
  std::vector<bool> group_decays_;           // the group takes spec.weight_decay
};

}  // namespace memsweep::plugins::optimizer
