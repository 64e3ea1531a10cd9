#include "core/memory/malloc_host_pool.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <new>

namespace memsweep::memory {

MallocHostPool::MallocHostPool() : counters_(std::make_shared<Counters>()) {}

at::Tensor MallocHostPool::Empty(at::IntArrayRef sizes, c10::ScalarType dtype) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(dtype));
  void* data = std::malloc(static_cast<size_t>(bytes > 0 ? bytes : 1));
  if (data == nullptr) throw std::bad_alloc();
  const int64_t now = counters_->allocated.fetch_add(bytes) + bytes;
  int64_t peak = counters_->peak.load();
  while (now > peak && !counters_->peak.compare_exchange_weak(peak, now)) {
  }
  std::shared_ptr<Counters> counters = counters_;
  return at::from_blob(
      data, sizes,
      [counters, bytes](void* p) {
        std::free(p);
        counters->allocated.fetch_sub(bytes);
      },
      at::TensorOptions().dtype(dtype));
}

int64_t MallocHostPool::AllocatedBytes() const { return counters_->allocated.load(); }
int64_t MallocHostPool::PeakBytes() const { return counters_->peak.load(); }

}  // namespace memsweep::memory
