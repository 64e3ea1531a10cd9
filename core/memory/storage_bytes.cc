#include "core/memory/storage_bytes.h"

#include <unordered_set>

namespace memsweep::memory {

int64_t DistinctStorageBytes(const std::vector<at::Tensor>& tensors) {
  std::unordered_set<const void*> seen;
  int64_t total = 0;
  for (const at::Tensor& t : tensors) {
    if (!t.defined() || !t.has_storage()) continue;
    const c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
    if (!seen.insert(storage).second) continue;
    total += static_cast<int64_t>(storage->nbytes());
  }
  return total;
}

}  // namespace memsweep::memory
