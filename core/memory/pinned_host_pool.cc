#include "core/memory/pinned_host_pool.h"

#include <ATen/ATen.h>
#include <ATen/core/CachingHostAllocator.h>

#include <memory>

namespace memsweep::memory {

at::Tensor PinnedHostPool::Empty(at::IntArrayRef sizes, c10::ScalarType dtype) {
  const int64_t bytes = BytesOf(sizes, dtype);
  // The CUDA host allocator's block goes back to that allocator's cache with the tensor;
  // is_pinned() on the tensor asks the allocator about the pointer.
  auto block = std::make_shared<at::DataPtr>(
      at::getHostAllocator(at::kCUDA)->allocate(static_cast<size_t>(bytes > 0 ? bytes : 1)));
  return Counted(block->get(), bytes, sizes, dtype, [block]() mutable { block.reset(); });
}

}  // namespace memsweep::memory
