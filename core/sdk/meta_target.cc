#include "core/sdk/meta_target.h"

#include <atomic>

namespace memsweep {
namespace {
std::atomic<c10::DeviceType> g_meta_target{c10::DeviceType::CPU};
}  // namespace

void SetMetaDeviceTarget(c10::DeviceType target) { g_meta_target = target; }
c10::DeviceType MetaDeviceTarget() { return g_meta_target.load(); }

}  // namespace memsweep
