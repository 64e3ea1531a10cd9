#include "memsweep/compute_device.h"

#include "core/sdk/meta_target.h"

namespace memsweep {

c10::DeviceType ComputeDevice(const at::Tensor& t) {
  return t.is_meta() ? MetaDeviceTarget() : t.device().type();
}

}  // namespace memsweep
