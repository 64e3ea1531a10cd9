// Gradient clipping by the global L2 norm, as torch.nn.utils.clip_grad_norm_ does: what the
// trainer applies before the optimizer slot's update.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace memsweep::train {

// Scales all gradients so that their global L2 norm is at most max_norm (no-op if max_norm <= 0).
// Returns the norm before clipping (NaN for an estimate's gradients, which have no values).
double ClipGradNorm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace memsweep::train
