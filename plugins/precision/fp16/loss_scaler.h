// LossScaler: dynamic loss scaling for fp16 training, on ATen's own kernels (what
// torch.amp.GradScaler runs): the loss is multiplied by the scale before backward; before the
// update the gradients are divided by it and checked for inf/NaN in one fused pass
// (_amp_foreach_non_finite_check_and_unscale_); a step whose gradients overflowed is skipped and
// the scale halves, and after `growth_interval` clean steps in a row it doubles
// (_amp_update_scale_). Works on CPU and CUDA tensors alike.
//
//   LossScaler scaler(options, device);
//   loss = scaler.Scale(loss);  loss.backward();
//   bool skip = scaler.UnscaleAndCheck(grads);   // grads now unscaled
//   scaler.Update();                             // after the (skipped or applied) step
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <vector>

namespace memsweep::plugins {

struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  LossScaler(const LossScalerOptions& options, c10::Device device);
  at::Tensor Scale(const at::Tensor& loss) const;
  // Divides every gradient by the scale in place; returns true when any held inf or NaN.
  // `found_inf` (a one-element float tensor) can be summed over ranks before Update reads it.
  bool UnscaleAndCheck(const std::vector<at::Tensor>& grads);
  at::Tensor& FoundInf() { return found_inf_; }
  // Backs the scale off after an overflow, grows it after growth_interval clean steps.
  void Update();
  double CurrentScale() const;

 private:
  LossScalerOptions options_;
  at::Tensor scale_;           // [1] float32
  at::Tensor growth_tracker_;  // [1] int32: clean steps in a row
  at::Tensor found_inf_;       // [1] float32
};

}  // namespace memsweep::plugins
