// Exact byte counts of groups of tensors, as memsweep's memory breakdown reports them.
//
// Tensors that share storage (views, tied weights) are counted once: the sum runs over distinct
// storages, and each storage counts its full nbytes (what the allocator handed out for it).
//
//   int64_t params = DistinctStorageBytes(model.parameters());
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace memsweep::memory {

int64_t DistinctStorageBytes(const std::vector<at::Tensor>& tensors);

}  // namespace memsweep::memory
