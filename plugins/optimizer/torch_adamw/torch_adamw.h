// TorchAdamW: torch.optim.AdamW of torch 2.11 as users run it, one of its three implementations
// (torch/optim/adam.py with decoupled_weight_decay=True), with the same ATen ops in the same
// order, so that the values and every allocation — the state, the step tensors, the temporaries,
// even the 0-dim tensors ATen makes of a Python number — are torch's:
//   for-loop  _single_tensor_adam (a plain AdamW on the CPU): per tensor, the denominator's two
//             full-size temporaries, the previous tensor's denominator still held;
//   foreach   _multi_tensor_adam (torch's default on CUDA): per (device, dtype) group, a list of
//             square roots as large as the group;
//   fused     _fused_adamw (torch._fused_adamw_): no temporaries; its step tensors live on the
//             parameters' device.
//
// Parameter groups as torch runs them: optimizer.step() calls the implementation once per group,
// after that group's _init_group, so a group's temporaries (the for-loop's last denominator,
// foreach's list of square roots) are freed before the next group's state is made and updated.
//
//   TorchAdamW optimizer(params, Implementation::kForeach, ParamGroups::kTrainer);
//   optimizer.Step(spec);   // spec.lr, betas, eps, weight_decay; params[i].grad() read
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsweep/optimizer.h"

namespace memsweep::plugins::torch_adamw {

enum class Implementation : uint8_t { kForLoop, kForeach, kFused };

// "for-loop", "foreach", "fused"; nullopt for any other name.
std::optional<Implementation> ParseImplementation(const std::string& name);
const char* ImplementationName(Implementation implementation);

// The optimizer's parameter groups: the order tensors are updated in and which get weight decay.
enum class ParamGroups : uint8_t {
  // transformers' Trainer (Trainer.create_optimizer): tensors of 2+ dims with weight decay, then
  // 1-D ones without (biases and norms: in the models memsweep builds, exactly the tensors whose
  // names match the Trainer's no-decay patterns); each group keeps the tensors' order.
  kTrainer,
  // torch.optim.AdamW(model.parameters()): one group, weight decay on every tensor.
  kSingle,
};

// "trainer", "single"; nullopt for any other name.
std::optional<ParamGroups> ParseParamGroups(const std::string& name);
const char* ParamGroupsName(ParamGroups groups);

class TorchAdamW final : public Optimizer {
 public:
  // `tensors` in the order the host gives them (transformers' model.parameters() order).
  TorchAdamW(std::vector<at::Tensor> tensors, Implementation implementation, ParamGroups groups);

  void Step(const OptimizerStepSpec& spec) override;
  // exp_avg and exp_avg_sq of every tensor seen with a gradient, and its step tensor unless that
  // is host memory beside a CUDA tensor (for-loop and foreach keep `step` on the CPU).
  std::vector<at::Tensor> StateTensors() const override;

 private:
  // torch's optimizer.state[p]; `count` is the step tensor's value, kept beside it so that the
  // bias corrections need not read the tensor (an estimate's meta tensors have no values).
  struct ParamState {
    at::Tensor step, exp_avg, exp_avg_sq;
    int64_t count = 0;
  };
  // The group's tensors with a gradient, in order, their state created where missing
  // (Adam._init_group).
  std::vector<size_t> InitGroup(const std::vector<size_t>& group);
  // One group's adam() call; spec.weight_decay is the group's.
  void ForLoop(const std::vector<size_t>& with_grad, const OptimizerStepSpec& spec);
  void Foreach(const std::vector<size_t>& with_grad, const OptimizerStepSpec& spec);
  void Fused(const std::vector<size_t>& with_grad, const OptimizerStepSpec& spec);
  // Optimizer._group_tensors_by_device_and_dtype: index lists in torch's group order.
  std::vector<std::vector<size_t>> GroupByDeviceAndDtype(const std::vector<size_t>& with_grad) const;

  std::vector<at::Tensor> tensors_;
  std::vector<ParamState> state_;
  Implementation implementation_;
  std::vector<std::vector<size_t>> groups_;  // tensor indices per parameter group, in step order
  std::vector<bool> group_decays_;           // the group takes spec.weight_decay (else 0)
};

}  // namespace memsweep::plugins::torch_adamw
