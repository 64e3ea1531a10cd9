#include "loss_scaler.h"

#include <ATen/ATen.h>

namespace memsweep::plugins {

LossScaler::LossScaler(const LossScalerOptions& options, c10::Device device)
    : options_(options),
      scale_(at::full({1}, options.init_scale, at::TensorOptions().dtype(at::kFloat).device(device))),
      growth_tracker_(at::zeros({1}, at::TensorOptions().dtype(at::kInt).device(device))),
      found_inf_(at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device))) {}

at::Tensor LossScaler::Scale(const at::Tensor& loss) const { return loss * scale_.to(loss.dtype()); }

bool LossScaler::UnscaleAndCheck(const std::vector<at::Tensor>& grads) {
  found_inf_.zero_();
  if (!grads.empty()) {
    const at::Tensor inv_scale = scale_.reciprocal();
    // An estimate's meta tensors (no values): the check and unscale work in place, allocating
    // nothing, and no step overflows — the estimate is of a step that updates.
    if (scale_.is_meta()) return false;
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
  }
  return !found_inf_.is_meta() && found_inf_.item<float>() > 0.0f;
}

void LossScaler::Update() {
  if (scale_.is_meta()) return;  // in place, on values an estimate does not have
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor,
                         options_.backoff_factor, options_.growth_interval);
}

double LossScaler::CurrentScale() const {
  return scale_.is_meta() ? options_.init_scale : scale_.item<double>();
}

}  // namespace memsweep::plugins
