// allocator/default: every tensor allocation goes to the system allocator through memsweep's
// tracker, with no caching: reserved bytes always equal allocated bytes.
#include <memory>

#include "memsweep/memory_backend.h"
#include "memsweep/plugin.h"

namespace {

class SystemAllocator final : public memsweep::AllocatorStrategy {
 public:
  // Math-preserving: only where tensors live changes, never their values.
  bool MathPreserving() const override { return true; }
  explicit SystemAllocator(const memsweep::PluginParams&) {}
  std::shared_ptr<memsweep::memory::MemoryBackend> MakeBackend() override {
    return std::make_shared<memsweep::memory::SystemBackend>();
  }
  // No stage hooks: its backend is all it gives.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(SystemAllocator, "default", "allocator", "1.0.0",
                "System allocation per tensor through memsweep's tracker; reserved == allocated",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/1)
