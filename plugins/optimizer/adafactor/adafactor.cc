#include "adafactor.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <utility>

#include "../common/trainer_groups.h"
#include "memsweep/allocation_label.h"

namespace memsweep::plugins::optimizer {
namespace {

bool LowPrecision(const at::Tensor& t) {
  return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
}

// Adafactor._rms: tensor.norm(2) / (tensor.numel() ** 0.5). Tensor.norm(2) is
// torch.linalg.vector_norm(tensor, 2) over every dim; the division is by a Python float.
at::Tensor Rms(const at::Tensor& t) {
  const at::Tensor norm = at::linalg_vector_norm(t, 2);
  return at::div(norm, std::pow(static_cast<double>(t.numel()), 0.5));
}

// Adafactor._approx_sq_grad: the outer product of the rows' and the columns' inverse roots.
at::Tensor ApproxSqGrad(const at::Tensor& row, const at::Tensor& col) {
  at::Tensor r_factor;
  {
    at::Tensor ratio = at::div(row, row.mean({-1}, /*keepdim=*/true));
    r_factor = ratio.rsqrt_().unsqueeze(-1);
  }
  at::Tensor c_factor = col.unsqueeze(-2).rsqrt();
  at::Tensor product = at::mul(r_factor, c_factor);
  r_factor.reset();  // the frame's locals, in Python's order
  c_factor.reset();
  return product;
}

}  // namespace

void CheckAdafactorOptions(const AdafactorOptions& o) {
  if (o.warmup_init && !o.relative_step) {
    throw std::invalid_argument(
        "warmup_init = true needs relative_step = true (transformers refuses it too); set "
        "warmup_init = false to use the [optimizer] lr schedule");
  }
  if (!(o.decay_rate <= 0)) {
    throw std::invalid_argument(
        "decay_rate must be 0 or below (beta2 at step t is 1 - t^decay_rate); the default is "
        "-0.8");
  }
  if (!(o.eps1 >= 0) || !(o.eps2 >= 0)) {
    throw std::invalid_argument("eps1 and eps2 must not be negative (defaults 1e-30 and 1e-3)");
  }
  if (!(o.clip_threshold > 0)) {
    throw std::invalid_argument("clip_threshold must be above 0 (the default is 1.0)");
  }
}

Adafactor::Adafactor(std::vector<at::Tensor> tensors, AdafactorOptions options)
    : tensors_(std::move(tensors)), options_(options), state_(tensors_.size()) {
  CheckAdafactorOptions(options_);
  optimizer_common::TrainerGroups made =
      optimizer_common::MakeTrainerGroups(tensors_, options_.groups == AdafactorGroups::kTrainer);
  groups_ = std::move(made.members);
  group_decays_ = std::move(made.decays);
}

void Adafactor::Step(const OptimizerStepSpec& spec) {
  torch::NoGradGuard no_grad;
  Frame f;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t i : groups_[g]) UpdateTensor(i, spec, group_decays_[g] ? spec.weight_decay : 0.0, f);
  }
  // step() returns: its frame drops the locals in the order it declares them.
  f.grad.reset();
  f.p_data_fp32.reset();
  f.lr_tensor.reset();
  f.update.reset();
}

// Adafactor._get_lr: the step size (relative or the schedule's), times max(eps2, RMS) with
// scale_parameter. Python's max(eps2, RMS) asks `RMS > eps2` (a 0-d bool tensor) and keeps the
// tensor RMS when it is larger, so the learning rate is then a 0-d fp32 tensor, RMS · step size.
void Adafactor::SetLr(const AdafactorTensorState& s, const OptimizerStepSpec& spec,
                      Frame& f) const {
  double rel_step_sz = spec.lr;
  if (options_.relative_step) {
    const double min_step =
        options_.warmup_init ? 1e-6 * static_cast<double>(s.step) : 1e-2;
    rel_step_sz = std::min(min_step, 1.0 / std::sqrt(static_cast<double>(s.step)));
  }
  if (!options_.scale_parameter) {
    f.lr_tensor.reset();
    f.lr_value = 1.0 * rel_step_sz;
    return;
  }
  bool rms_larger = true;  // the estimate's branch: no values on the meta device
  {
    const at::Tensor greater = at::gt(s.rms, options_.eps2);
    if (!greater.is_meta()) rms_larger = greater.item<bool>();
  }
  if (!rms_larger) {
    f.lr_tensor.reset();
    f.lr_value = options_.eps2 * rel_step_sz;
    return;
  }
  at::Tensor lr = at::mul(s.rms, rel_step_sz);
  f.lr_tensor = std::move(lr);  // the previous tensor's lr is dropped here
}

void Adafactor::UpdateTensor(size_t i, const OptimizerStepSpec& spec, double weight_decay,
                             Frame& f) {
  const at::Tensor& p = tensors_[i];
  if (!p.grad().defined()) return;
  f.grad = p.grad();
  if (LowPrecision(f.grad)) f.grad = f.grad.to(at::kFloat);
  const at::Tensor& grad = f.grad;
  AdafactorTensorState& s = state_[i];
  const bool factored = grad.dim() >= 2;
  if (s.step == 0) {  // len(state) == 0: the first gradient seen
    memsweep::memory::AllocationLabel label("optimizer state");
    if (options_.first_moment) s.exp_avg = at::zeros_like(grad);
    if (factored) {
      // torch.zeros(shape).to(grad): fp32 zeros, on grad's device.
      const at::IntArrayRef shape = grad.sizes();
      std::vector<int64_t> col(shape.begin(), shape.end() - 2);
      col.push_back(shape.back());
      s.exp_avg_sq_row = at::zeros(shape.slice(0, shape.size() - 1), grad.options());
      s.exp_avg_sq_col = at::zeros(col, grad.options());
    } else {
      s.exp_avg_sq = at::zeros_like(grad);
    }
  }
  f.p_data_fp32 = p;
  if (LowPrecision(p)) f.p_data_fp32 = f.p_data_fp32.to(at::kFloat);
  at::Tensor& p_data_fp32 = f.p_data_fp32;

  s.step += 1;
  {
    memsweep::memory::AllocationLabel label("optimizer state");
    s.rms = Rms(p_data_fp32);
  }
  SetLr(s, spec, f);

  const double beta2t = 1.0 - std::pow(static_cast<double>(s.step), options_.decay_rate);
  {
    at::Tensor squared = at::pow(grad, 2);
    // eps1 becomes a wrapped fp64 scalar, which the CPU's TensorIterator casts to fp32 (4 bytes,
    // alive while the sum is made) and the meta one does not. The update's full-size sum can be
    // the step's peak (beside the previous tensor's update), so the estimate holds them too.
    const at::Tensor scalar_cast =
        grad.is_meta() ? at::empty({}, at::TensorOptions().dtype(at::kFloat)) : at::Tensor();
    at::Tensor update = at::add(squared, options_.eps1);
    squared.reset();
    f.update = std::move(update);  // the previous tensor's update is dropped here
  }
  if (factored) {
    s.exp_avg_sq_row.mul_(beta2t).add_(f.update.mean({-1}), 1.0 - beta2t);
    s.exp_avg_sq_col.mul_(beta2t).add_(f.update.mean({-2}), 1.0 - beta2t);
    f.update = ApproxSqGrad(s.exp_avg_sq_row, s.exp_avg_sq_col);
    f.update.mul_(grad);
  } else {
    s.exp_avg_sq.mul_(beta2t).add_(f.update, 1.0 - beta2t);
    f.update = s.exp_avg_sq.rsqrt().mul_(grad);
  }
  at::Tensor& update = f.update;

  {
    at::Tensor clip = at::div(Rms(update), options_.clip_threshold);
    clip.clamp_(at::Scalar(1.0), std::nullopt);
    update.div_(clip);
  }
  if (f.lr_tensor.defined()) {
    update.mul_(f.lr_tensor);
  } else {
    update.mul_(f.lr_value);
  }

  if (options_.first_moment) {
    s.exp_avg.mul_(spec.beta1).add_(update, 1 - spec.beta1);
    update = s.exp_avg;
  }

  if (weight_decay != 0) {
    if (f.lr_tensor.defined()) {
      // -weight_decay * lr: a 0-d tensor, passed as alpha (Python reads its value).
      const at::Tensor alpha = at::mul(f.lr_tensor, -weight_decay);
      p_data_fp32.add_(p_data_fp32, alpha.is_meta() ? at::Scalar(0.0) : alpha.item());
    } else {
      p_data_fp32.add_(p_data_fp32, -weight_decay * f.lr_value);
    }
  }

  p_data_fp32.add_(at::neg(update));

  if (LowPrecision(p)) p.copy_(p_data_fp32);
}

std::vector<at::Tensor> Adafactor::StateTensors() const {
  std::vector<at::Tensor> tensors;
  for (const AdafactorTensorState& s : state_) {
    for (const at::Tensor* t :
         {&s.exp_avg, &s.exp_avg_sq_row, &s.exp_avg_sq_col, &s.exp_avg_sq, &s.rms}) {
      if (t->defined()) tensors.push_back(*t);
    }
  }
  return tensors;
}

}  // namespace memsweep::plugins::optimizer
