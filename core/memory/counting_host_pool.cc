#include "core/memory/counting_host_pool.h"

#include <ATen/ATen.h>

namespace memsweep::memory {

CountingHostPool::CountingHostPool() : counters_(std::make_shared<Counters>()) {}

int64_t CountingHostPool::AllocatedBytes() const { return counters_->allocated.load(); }
int64_t CountingHostPool::PeakBytes() const { return counters_->peak.load(); }

int64_t CountingHostPool::BytesOf(at::IntArrayRef sizes, c10::ScalarType dtype) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  return numel * static_cast<int64_t>(c10::elementSize(dtype));
}

at::Tensor CountingHostPool::Counted(void* data, int64_t bytes, at::IntArrayRef sizes,
                                     c10::ScalarType dtype, std::function<void()> release,
                                     c10::DeviceType device) {
  const int64_t now = counters_->allocated.fetch_add(bytes) + bytes;
  int64_t peak = counters_->peak.load();
  while (now > peak && !counters_->peak.compare_exchange_weak(peak, now)) {
  }
  std::shared_ptr<Counters> counters = counters_;
  // The device named, not looked up from the pointer (a meta tensor's points at no device).
  return at::for_blob(data, sizes)
      .deleter([counters, bytes, release = std::move(release)](void*) {
        release();
        counters->allocated.fetch_sub(bytes);
      })
      .options(at::TensorOptions().dtype(dtype).device(device))
      .target_device(c10::Device(device))
      .make_tensor();
}

}  // namespace memsweep::memory
