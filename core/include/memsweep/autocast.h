// memsweep/autocast.h: autocast on the run's device, for plugins that turn it on or read it.
//
// LibTorch keeps autocast's state per device type and dispatches it on CPU and CUDA tensors. On
// the meta device of `memsweep estimate` (docs/estimate.md), whose tensors have no data, memsweep
// runs autocast itself — the same casts of the same operations, the same weight cache — through
// LibTorch's PrivateUse1 autocast state. A plugin that uses these functions rather than
// at::autocast's with its tensors' device type works on every device the run may use.
//
//   memsweep::SetAutocast(ctx.device.type(), true, at::kBFloat16);   // the forward pass
//   ...
//   memsweep::SetAutocast(ctx.device.type(), false, at::kBFloat16);
//   memsweep::ClearAutocastCache();
#pragma once

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace memsweep {

// Turns autocast on or off for tensors of `device` (CPU, CUDA or the estimate's meta), computing
// in `dtype` (autocast's lower precision) while on. This thread only, as LibTorch's.
void SetAutocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype);
// Whether autocast is on for tensors of `device`, and its dtype.
bool AutocastEnabled(c10::DeviceType device);
c10::ScalarType AutocastDtype(c10::DeviceType device);
// Empties the weight cache (the low-precision copies of leaf parameters kept while autocast is
// on): LibTorch's and the meta device's.
void ClearAutocastCache();

}  // namespace memsweep
