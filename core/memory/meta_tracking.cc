#include "core/memory/meta_tracking.h"

#include <c10/core/Allocator.h>

#include <atomic>
#include <cstdint>
#include <limits>

#include "core/memory/tracking_allocator.h"

namespace memsweep::memory {
namespace {

// The tracking allocator's blocks, labelled as the meta device's.
class MetaTrackingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    c10::DataPtr ptr = TrackingAllocator::Instance().allocate(nbytes);
    ptr.unsafe_set_device(c10::Device(c10::DeviceType::Meta));
    return ptr;
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return TrackingAllocator::Instance().raw_deleter();
  }
  void copy_data(void*, const void*, std::size_t) const override {}  // meta: nothing to copy
};

std::atomic<bool> g_meta_installed{false};

}  // namespace

void InstallMetaTracking() {
  TrackingAllocator::Install();
  if (g_meta_installed.exchange(true)) return;
  static auto* allocator = new MetaTrackingAllocator();  // never destroyed, as the tracker
  c10::SetAllocator(c10::DeviceType::Meta, allocator, std::numeric_limits<uint8_t>::max());
}

}  // namespace memsweep::memory
