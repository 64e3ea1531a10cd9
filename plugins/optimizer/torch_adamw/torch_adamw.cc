#include "torch_adamw.h"

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/ForeachUtils.h>
#include <c10/core/DefaultDtype.h>
#include <torch/utils.h>

#include <cmath>
#include <utility>

#include "../common/trainer_groups.h"
#include "memsweep/allocation_label.h"

namespace memsweep::plugins::torch_adamw {
namespace {

// optimizer._get_scalar_dtype: the step tensors' dtype (float32 unless the default is float64;
// always float32 for fused).
at::ScalarType ScalarDtype(bool fused) {
  if (fused) return at::kFloat;
  return c10::typeMetaToScalarType(c10::get_default_dtype()) == at::kDouble ? at::kDouble
                                                                              : at::kFloat;
}

// Python's `beta ** step` and `x ** 0.5` on floats: C's pow, as CPython's float_pow calls it.
double PyPow(double base, double exponent) { return std::pow(base, exponent); }

// A Python number where an op takes a tensor, as torch's argument parser passes it: a 0-dim
// double (int64 for an int) tensor marked as a wrapped number, so that `t.mul_(0.95)` runs
// aten::mul_.Tensor as in Python — aten::mul_.Scalar rounds differently for bf16 tensors.
at::Tensor PyNumber(const at::Scalar& value) { return at::native::wrapped_scalar_tensor(value); }

}  // namespace

std::optional<Implementation> ParseImplementation(const std::string& name) {
  if (name == "for-loop") return Implementation::kForLoop;
  if (name == "foreach") return Implementation::kForeach;
  if (name == "fused") return Implementation::kFused;
  return std::nullopt;
}

const char* ImplementationName(Implementation implementation) {
  switch (implementation) {
    case Implementation::kForLoop: return "for-loop";
    case Implementation::kForeach: return "foreach";
    case Implementation::kFused: return "fused";
  }
  return "?";
}

std::optional<ParamGroups> ParseParamGroups(const std::string& name) {
  if (name == "trainer") return ParamGroups::kTrainer;
  if (name == "single") return ParamGroups::kSingle;
  return std::nullopt;
}

const char* ParamGroupsName(ParamGroups groups) {
  switch (groups) {
    case ParamGroups::kTrainer: return "trainer";
    case ParamGroups::kSingle: return "single";
  }
  return "?";
}

TorchAdamW::TorchAdamW(std::vector<at::Tensor> tensors, Implementation implementation,
                       ParamGroups groups)
    : tensors_(std::move(tensors)), state_(tensors_.size()), implementation_(implementation) {
  optimizer_common::TrainerGroups made =
      optimizer_common::MakeTrainerGroups(tensors_, groups == ParamGroups::kTrainer);
  groups_ = std::move(made.members);
  group_decays_ = std::move(made.decays);
}

std::vector<size_t> TorchAdamW::InitGroup(const std::vector<size_t>& group) {
  std::vector<size_t> with_grad;
  for (const size_t i : group) {
    const at::Tensor& p = tensors_[i];
    if (!p.grad().defined()) continue;
    with_grad.push_back(i);
    ParamState& s = state_[i];
    if (s.exp_avg.defined()) continue;
    memsweep::memory::AllocationLabel label("optimizer state");
    // "Deliberately host `step` on CPU if both capturable and fused are off" (adam.py).
    if (implementation_ == Implementation::kFused) {
      s.step = at::zeros({}, at::TensorOptions().dtype(ScalarDtype(true)).device(p.device()));
    } else {
      s.step = at::scalar_tensor(0.0, at::TensorOptions().dtype(ScalarDtype(false)));
    }
    s.exp_avg = at::zeros_like(p, at::MemoryFormat::Preserve);
    s.exp_avg_sq = at::zeros_like(p, at::MemoryFormat::Preserve);
  }
  return with_grad;
}

void TorchAdamW::Step(const OptimizerStepSpec& spec) {
  torch::NoGradGuard no_grad;  // torch's step runs under no_grad (differentiable=False)
  // Adam.step: per group, _init_group then adam(); what adam() allocated is gone when it
  // returns, before the next group's state is made.
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::vector<size_t> with_grad = InitGroup(groups_[g]);
    if (with_grad.empty()) continue;  // adam() on empty lists allocates nothing
    OptimizerStepSpec group_spec = spec;
    if (!group_decays_[g]) group_spec.weight_decay = 0.0;
    switch (implementation_) {
      case Implementation::kForLoop: ForLoop(with_grad, group_spec); break;
      case Implementation::kForeach: Foreach(with_grad, group_spec); break;
      case Implementation::kFused: Fused(with_grad, group_spec); break;
    }
  }
}

// _single_tensor_adam, decoupled weight decay, capturable = differentiable = amsgrad = False.
void TorchAdamW::ForLoop(const std::vector<size_t>& with_grad, const OptimizerStepSpec& spec) {
  const double lr = spec.lr, beta1 = spec.beta1, beta2 = spec.beta2;
  // Python's `denom` outlives its iteration: it is released when the next tensor's denominator
  // is assigned to it (or when the function returns), so two tensors' denominators meet.
  at::Tensor denom;
  for (const size_t i : with_grad) {
    at::Tensor& param = tensors_[i];
    const at::Tensor& grad = param.grad();
    ParamState& s = state_[i];
    s.step.add_(PyNumber(int64_t{1}));  // step_t += 1
    ++s.count;
    if (spec.weight_decay != 0) param.mul_(PyNumber(1 - lr * spec.weight_decay));
    s.exp_avg.lerp_(grad, 1 - beta1);
    // exp_avg_sq.mul_(beta2).addcmul_(...): the wrapped beta2 goes when mul_ returns.
    s.exp_avg_sq.mul_(PyNumber(beta2));
    s.exp_avg_sq.addcmul_(grad, grad, 1 - beta2);
    const auto step = static_cast<double>(s.count);  // _get_value(step_t)
    const double bias_correction1 = 1 - PyPow(beta1, step);
    const double bias_correction2 = 1 - PyPow(beta2, step);
    const double step_size = lr / bias_correction1;
    const double bias_correction2_sqrt = PyPow(bias_correction2, 0.5);
    // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps): the square root is
    // released as soon as the division returns, before add_.
    at::Tensor root = s.exp_avg_sq.sqrt();
    at::Tensor quotient = at::div(root, PyNumber(bias_correction2_sqrt));
    root.reset();
    quotient.add_(PyNumber(spec.eps));
    denom = std::move(quotient);
    param.addcdiv_(s.exp_avg, denom, -step_size);
  }
}

// _multi_tensor_adam, decoupled weight decay, capturable = differentiable = amsgrad = False.
void TorchAdamW::Foreach(const std::vector<size_t>& with_grad, const OptimizerStepSpec& spec) {
  const double lr = spec.lr, beta1 = spec.beta1, beta2 = spec.beta2;
  // Python's `exp_avg_sq_sqrt` outlives its (device, dtype) group: the next one's list is made
  // before it goes; it is freed when this call (one parameter group's) returns.
  std::vector<at::Tensor> exp_avg_sq_sqrt;
  for (const std::vector<size_t>& group : GroupByDeviceAndDtype(with_grad)) {
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
    for (const size_t i : group) {
      params.push_back(tensors_[i]);
      grads.push_back(tensors_[i].grad());
      exp_avgs.push_back(state_[i].exp_avg);
      exp_avg_sqs.push_back(state_[i].exp_avg_sq);
      steps.push_back(state_[i].step);
    }
    if (steps[0].is_cpu()) {
      // torch.tensor(1.0, device="cpu"): a 0-dim tensor of the default dtype.
      at::_foreach_add_(steps,
                        at::scalar_tensor(1.0, at::TensorOptions().dtype(c10::typeMetaToScalarType(
                                                   c10::get_default_dtype()))),
                        1.0);
    } else {
      at::_foreach_add_(steps, 1);
    }
    for (const size_t i : group) ++state_[i].count;
    if (spec.weight_decay != 0) at::_foreach_mul_(params, 1 - lr * spec.weight_decay);
    at::_foreach_lerp_(exp_avgs, grads, 1 - beta1);
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
    std::vector<at::Scalar> step_size, bias_correction2_sqrt;
    for (const size_t i : group) {
      const auto step = static_cast<double>(state_[i].count);
      const double bias_correction1 = 1 - PyPow(beta1, step);
      const double bias_correction2 = 1 - PyPow(beta2, step);
      step_size.emplace_back((lr / bias_correction1) * -1);
      bias_correction2_sqrt.emplace_back(PyPow(bias_correction2, 0.5));
    }
    exp_avg_sq_sqrt = at::_foreach_sqrt(exp_avg_sqs);
    at::_foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt);
    at::_foreach_add_(exp_avg_sq_sqrt, spec.eps);
    at::_foreach_addcdiv_(params, exp_avgs, exp_avg_sq_sqrt, step_size);
  }
}

// _fused_adam with decoupled weight decay: torch._fused_adamw_ per (device, dtype) group.
void TorchAdamW::Fused(const std::vector<size_t>& with_grad, const OptimizerStepSpec& spec) {
  for (const std::vector<size_t>& group : GroupByDeviceAndDtype(with_grad)) {
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
    for (const size_t i : group) {
      params.push_back(tensors_[i]);
      grads.push_back(tensors_[i].grad());
      exp_avgs.push_back(state_[i].exp_avg);
      exp_avg_sqs.push_back(state_[i].exp_avg_sq);
      steps.push_back(state_[i].step);
    }
    at::_foreach_add_(steps, 1);
    for (const size_t i : group) ++state_[i].count;
    // LibTorch has no meta kernel for _fused_adamw_ (torch's Python registers one); it
    // allocates nothing, so the meta device skips it.
    if (params[0].is_meta()) continue;
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps,
                      spec.lr, spec.beta1, spec.beta2, spec.weight_decay, spec.eps,
                      /*amsgrad=*/false, /*maximize=*/false);
  }
}

std::vector<std::vector<size_t>> TorchAdamW::GroupByDeviceAndDtype(
    const std::vector<size_t>& with_grad) const {
  // The function torch's Python calls (torch._C._group_tensors_by_device_and_dtype), so that
  // the groups come in its order; the lists are those adam.py passes.
  at::native::nested_optional_tensorvec_t lists(6);
  for (const size_t i : with_grad) {
    lists[0].emplace_back(tensors_[i]);
    lists[1].emplace_back(tensors_[i].grad());
    lists[2].emplace_back(state_[i].exp_avg);
    lists[3].emplace_back(state_[i].exp_avg_sq);
    lists[5].emplace_back(state_[i].step);
  }
  std::vector<std::vector<size_t>> groups;
  for (const auto& [key, tensors_and_indices] :
       at::native::_group_tensors_by_first_tensors_device_and_dtype(lists, true)) {
    std::vector<size_t> group;
    for (const size_t k : tensors_and_indices.second) group.push_back(with_grad[k]);
    groups.push_back(std::move(group));
  }
  return groups;
}

std::vector<at::Tensor> TorchAdamW::StateTensors() const {
  std::vector<at::Tensor> state;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const ParamState& s = state_[i];
    if (!s.exp_avg.defined()) continue;
    if (!(s.step.is_cpu() && tensors_[i].is_cuda())) state.push_back(s.step);
    state.push_back(s.exp_avg);
    state.push_back(s.exp_avg_sq);
  }
  return state;
}

}  // namespace memsweep::plugins::torch_adamw
