// memsweep/compute_device.h: the device a tensor's work stands for. In a run it is the tensor's own
// device; in `memsweep estimate`, whose tensors live on LibTorch's meta device (docs/estimate.md),
// it is the device the estimate stands for — the CPU or CUDA. A plugin that takes a different path
// per device (a kernel, a layout, a fused step) asks this rather than t.is_cpu() or t.is_cuda(), so
// that its estimate allocates what its run allocates.
//
//   if (memsweep::ComputeDevice(q) == c10::DeviceType::CPU) { /* the CPU's path */ }
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>

namespace memsweep {

c10::DeviceType ComputeDevice(const at::Tensor& t);

}  // namespace memsweep
