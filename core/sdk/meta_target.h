// The device a run on the meta device stands for (the estimate, docs/estimate.md): the CPU or
// CUDA. Core's own code that takes another path per device — memsweep's fused AdamW loop on the
// CPU, the composite update elsewhere — takes the target's path on meta tensors too, so an
// estimate allocates what the run it stands for allocates. Set by estimate::SetMetaTarget; not
// part of the installed SDK.
#pragma once

#include <c10/core/DeviceType.h>

namespace memsweep {

void SetMetaDeviceTarget(c10::DeviceType target);
c10::DeviceType MetaDeviceTarget();  // default: the CPU

}  // namespace memsweep
