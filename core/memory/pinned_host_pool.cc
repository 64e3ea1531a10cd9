#include "core/memory/pinned_host_pool.h"

#include <ATen/ATen.h>
#include <ATen/core/CachingHostAllocator.h>

namespace memsweep::memory {

PinnedHostPool::PinnedHostPool() : counters_(std::make_shared<Counters>()) {}

at::Tensor PinnedHostPool::Empty(at::IntArrayRef sizes, c10::ScalarType dtype) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(dtype));
  // The CUDA host allocator's block; it goes back to the allocator's cache with the tensor.
  auto block = std::make_shared<at::DataPtr>(
      at::getHostAllocator(at::kCUDA)->allocate(static_cast<size_t>(bytes > 0 ? bytes : 1)));
  const int64_t now = counters_->allocated.fetch_add(bytes) + bytes;
  int64_t peak = counters_->peak.load();
  while (now > peak && !counters_->peak.compare_exchange_weak(peak, now)) {
  }
  std::shared_ptr<Counters> counters = counters_;
  return at::from_blob(
      block->get(), sizes,
      [counters, bytes, block](void*) mutable {
        block.reset();
        counters->allocated.fetch_sub(bytes);
      },
      at::TensorOptions().dtype(dtype));  // pinned: is_pinned() asks the host allocator
}

int64_t PinnedHostPool::AllocatedBytes() const { return counters_->allocated.load(); }
int64_t PinnedHostPool::PeakBytes() const { return counters_->peak.load(); }

}  // namespace memsweep::memory
