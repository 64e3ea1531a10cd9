#include "master_weights.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace memsweep::plugins::precision {

MasterWeights MasterWeights::Convert(const std::vector<at::Tensor>& parameters) {
  MasterWeights weights;
  weights.Add(parameters);
  return weights;
}

void MasterWeights::Add(const std::vector<at::Tensor>& parameters) {
  torch::NoGradGuard no_grad;
  for (const at::Tensor& p : parameters) {
    if (!converted_.insert(p.unsafeGetTensorImpl()).second) continue;  // converted before
    // Frozen (an adapter's base, its quantisation state): stored as the adapter chose
    // (adapter/lora's base_dtype), with no master copy.
    if (!p.requires_grad()) continue;
    if (p.scalar_type() != at::kFloat) {
      throw std::invalid_argument("precision/bf16 expects fp32 parameters to convert, found " +
                                  std::string(c10::toString(p.scalar_type())));
    }
    // detach() shares the fp32 storage; set_data then points the parameter at a new bf16
    // storage, so the master owns the original values and no extra fp32 copy is made.
    at::Tensor master = p.detach().requires_grad_(true);
    p.set_data(p.to(at::kBFloat16));
    parameters_.push_back(p);
    masters_.push_back(std::move(master));
  }
}

void MasterWeights::Remove(const std::vector<at::Tensor>& parameters) {
  for (const at::Tensor& p : parameters) {
    for (size_t i = 0; i < parameters_.size(); ++i) {
      if (!parameters_[i].is_same(p)) continue;
      parameters_.erase(parameters_.begin() + static_cast<std::ptrdiff_t>(i));
      masters_.erase(masters_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
}

std::vector<at::Tensor> MasterWeights::MastersFor(const std::vector<at::Tensor>& parameters) const {
  std::vector<at::Tensor> masters;
  for (const at::Tensor& p : parameters) {
    size_t i = 0;
    while (i < parameters_.size() && !parameters_[i].is_same(p)) ++i;
    if (i == parameters_.size()) {
      std::ostringstream shape;
      shape << p.sizes();
      throw std::invalid_argument("precision/bf16: a parameter to optimize was not converted to "
                                  "bf16 at the end of the model stage (shape " + shape.str() + ")");
    }
    masters.push_back(masters_[i]);
  }
  return masters;
}

void MasterWeights::GradientsToMasters() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    at::Tensor& grad = parameters_[i].mutable_grad();
    if (!grad.defined()) continue;
    masters_[i].mutable_grad() = grad.to(at::kFloat);
    grad = at::Tensor();  // released one by one: the fp32 copies never coexist with all bf16 ones
  }
}

void MasterWeights::MastersToParameters() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].copy_(masters_[i]);
}

}  // namespace memsweep::plugins::precision
