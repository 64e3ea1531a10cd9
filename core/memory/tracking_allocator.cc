#include "core/memory/tracking_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/memory/byte_size.h"
#include "memsweep/allocation_label.h"

namespace memsweep::memory {
namespace {

constexpr size_t kAlignment = 64;  // c10's CPU alignment, what oneDNN/AVX-512 kernels expect
std::atomic<bool> g_installed{false};

void RaiseTo(std::atomic<int64_t>& peak, int64_t value) {
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

// 64-byte aligned blocks from plain malloc: nbytes + 64 bytes, the aligned address at least 16
// bytes in (malloc aligns to 16), the block's own address stored just before it. posix_memalign
// would ask glibc for nbytes + 64 + 32 and split the slack off, so the block a tensor frees is
// too small for the next tensor of the same size and the heap grows instead (new pages, faulted
// in and zeroed). With equal requests for equal sizes a freed block serves the next one exactly.
void* SystemBackend::Allocate(size_t nbytes) {
  TrackingAllocator::Instance().Charge(static_cast<int64_t>(nbytes), static_cast<int64_t>(nbytes));
  void* raw = std::malloc(nbytes + kAlignment);
  if (raw == nullptr) {
    TrackingAllocator::Instance().Uncharge(static_cast<int64_t>(nbytes));
    throw std::bad_alloc();
  }
  const uintptr_t aligned =
      (reinterpret_cast<uintptr_t>(raw) + kAlignment) & ~static_cast<uintptr_t>(kAlignment - 1);
  void* ptr = reinterpret_cast<void*>(aligned);
  static_cast<void**>(ptr)[-1] = raw;
  reserved_ += static_cast<int64_t>(nbytes);
  return ptr;
}

void SystemBackend::Deallocate(void* ptr, size_t nbytes) {
  std::free(static_cast<void**>(ptr)[-1]);
  reserved_ -= static_cast<int64_t>(nbytes);
  TrackingAllocator::Instance().Uncharge(static_cast<int64_t>(nbytes));
}

int64_t SystemBackend::ReservedBytes() const { return reserved_; }

TrackingAllocator::TrackingAllocator() {
  backends_.push_back(std::make_shared<SystemBackend>());
  backend_ = backends_.back().get();
}

TrackingAllocator& TrackingAllocator::Instance() {
  // Never destroyed: tensors may be freed during static destruction.
  static auto* instance = new TrackingAllocator();
  return *instance;
}

DeviceBudget& SimulatedDeviceBudget() { return TrackingAllocator::Instance(); }

void KeepFreedPagesInTheHeap() {
  // glibc serves large requests (≥ 128 KiB, adapting up to 32 MiB) with a fresh mmap and gives
  // them back with munmap, and trims the heap's top: every training step would fault in and zero
  // its activations' pages again (~10% of a small-preset fp32 step, docs/benchmarks-history.md,
  // "CPU heap"). Serving everything from the heap and never trimming keeps the pages of the
  // previous step for the next. What tensors hold — every figure memsweep reports — is
  // unchanged; only the process's RSS keeps its high-water mark instead of shrinking.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
}

TrackingAllocator& TrackingAllocator::Install() {
  TrackingAllocator& tracker = Instance();
  if (!g_installed.exchange(true)) {
    KeepFreedPagesInTheHeap();
    c10::SetCPUAllocator(&tracker, std::numeric_limits<uint8_t>::max());
  }
  return tracker;
}

bool TrackingAllocator::Installed() { return g_installed.load(); }

c10::DataPtr TrackingAllocator::allocate(size_t nbytes) {
  const c10::Device device(c10::DeviceType::CPU);
  if (nbytes == 0) return {nullptr, nullptr, &TrackingAllocator::Delete, device};
  void* ptr = nullptr;
  int64_t now = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ptr = backend_->Allocate(nbytes);
    Block block{nbytes, backend_, std::nullopt};
    if (history_) {
      const auto addr = reinterpret_cast<uintptr_t>(ptr);
      const auto size = static_cast<int64_t>(nbytes);
      block.position = CurrentPosition();
      history_->Record(HistoryAction::kSegmentAlloc, addr, size, *block.position);
      history_->Record(HistoryAction::kAlloc, addr, size, *block.position);
    }
    blocks_.emplace(ptr, block);
    // Counted under the lock: the history's order and the counters' agree (its replay gives
    // exactly the peak).
    now = allocated_.fetch_add(static_cast<int64_t>(nbytes)) + nbytes;
  }
  RaiseTo(peak_, now);
  RaiseTo(window_peak_, now);
  allocations_.fetch_add(1, std::memory_order_relaxed);
  largest_.Record(static_cast<int64_t>(nbytes));
  return {ptr, ptr, &TrackingAllocator::Delete, device};
}

c10::DeleterFnPtr TrackingAllocator::raw_deleter() const { return &TrackingAllocator::Delete; }

void TrackingAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  default_copy_data(dest, src, count);
}

void TrackingAllocator::Delete(void* ptr) {
  if (ptr != nullptr) Instance().Free(ptr);
}

void TrackingAllocator::Free(void* ptr) const {
  size_t nbytes = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end()) return;  // not ours: cannot happen for pointers we handed out
    nbytes = it->second.nbytes;
    it->second.backend->Deallocate(ptr, nbytes);
    blocks_.erase(it);
    if (history_) {
      const auto addr = reinterpret_cast<uintptr_t>(ptr);
      const auto size = static_cast<int64_t>(nbytes);
      const HistoryPosition position = CurrentPosition();
      history_->Record(HistoryAction::kFreeRequested, addr, size, position);
      history_->Record(HistoryAction::kFreeCompleted, addr, size, position);
      history_->Record(HistoryAction::kSegmentFree, addr, size, position);
    }
    allocated_.fetch_sub(static_cast<int64_t>(nbytes));
  }
  deallocations_.fetch_add(1, std::memory_order_relaxed);
}

void TrackingAllocator::SetBackend(std::shared_ptr<MemoryBackend> backend) {
  std::lock_guard<std::mutex> lock(mutex_);
  backends_.push_back(std::move(backend));
  backend_ = backends_.back().get();
}

MemoryBackend& TrackingAllocator::Backend() const { return *backend_; }

std::shared_ptr<MemoryBackend> TrackingAllocator::BackendPtr() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& backend : backends_) {
    if (backend.get() == backend_) return backend;
  }
  return nullptr;
}

void TrackingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  backend_->EmptyCache();
}

void TrackingAllocator::EmptyEveryCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& backend : backends_) backend->EmptyCache();
}

void TrackingAllocator::SetBudget(std::optional<int64_t> budget_bytes) {
  budget_.store(budget_bytes ? *budget_bytes : kNoBudget);
}

std::optional<int64_t> TrackingAllocator::Budget() const {
  const int64_t budget = budget_.load();
  if (budget == kNoBudget) return std::nullopt;
  return budget;
}

void TrackingAllocator::Charge(int64_t nbytes, int64_t requested_bytes) const {
  const int64_t budget = budget_.load();
  const int64_t reserved = reserved_.load(std::memory_order_relaxed);
  if (budget != kNoBudget && reserved + nbytes > budget) {
    OomEvent event;
    event.requested_bytes = requested_bytes;
    event.budget_bytes = budget;
    event.allocated_bytes = AllocatedBytes();
    event.reserved_bytes = reserved;
    event.short_bytes = reserved + nbytes - budget;
    event.stage = Stage();
    std::ostringstream msg;
    msg << "memsweep device out of memory. Tried to allocate " << FormatBytes(requested_bytes)
        << "; budget " << FormatBytes(budget) << ", " << FormatBytes(event.allocated_bytes)
        << " allocated, " << FormatBytes(std::max<int64_t>(0, budget - reserved)) << " free, "
        << FormatBytes(reserved) << " reserved (stage: " << event.stage << ")";
    event.message = msg.str();
    last_oom_ = event;  // the caller (a backend inside allocate) holds mutex_
    TORCH_CHECK_WITH(OutOfMemoryError, false, event.message);
  }
  const int64_t now = reserved_.fetch_add(nbytes) + nbytes;
  RaiseTo(peak_reserved_, now);
}

void TrackingAllocator::Uncharge(int64_t nbytes) const { reserved_.fetch_sub(nbytes); }

MemoryCounters TrackingAllocator::Counters() const {
  MemoryCounters c;
  c.allocated_bytes = AllocatedBytes();
  c.peak_allocated_bytes = PeakAllocatedBytes();
  c.reserved_bytes = ReservedBytes();
  c.peak_reserved_bytes = PeakReservedBytes();
  c.allocations = allocations_.load();
  c.deallocations = deallocations_.load();
  return c;
}

void TrackingAllocator::ResetPeak() {
  peak_.store(AllocatedBytes());
  peak_reserved_.store(ReservedBytes());
  window_peak_.store(AllocatedBytes());
}

void TrackingAllocator::ResetWindowPeak() { window_peak_.store(AllocatedBytes()); }

void TrackingAllocator::ResetCounts() {
  allocations_.store(0);
  deallocations_.store(0);
}

HistoryPosition TrackingAllocator::CurrentPosition() const {
  return HistoryPosition{largest_.Stage(), largest_.Step(), largest_.MicroBatch(),
                         CurrentAllocationLabel()};
}

void TrackingAllocator::StartHistory(int64_t max_entries) {
  std::lock_guard<std::mutex> lock(mutex_);
  history_ = std::make_unique<AllocationHistory>(max_entries);
}

bool TrackingAllocator::RecordingHistory() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return history_ != nullptr;
}

MemorySnapshot TrackingAllocator::TakeHistory() {
  std::vector<HistoryEvent> events;
  std::vector<LiveBlock> live;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!history_) return {};
    events = history_->Events();
    history_.reset();
    live.reserve(blocks_.size());
    for (const auto& [ptr, block] : blocks_) {
      live.push_back({reinterpret_cast<uintptr_t>(ptr), static_cast<int64_t>(block.nbytes),
                      block.position});
    }
  }
  // By address, as PyTorch lists its segments; pickled outside the lock.
  std::sort(live.begin(), live.end(),
            [](const LiveBlock& a, const LiveBlock& b) { return a.addr < b.addr; });
  MemorySnapshot snapshot;
  snapshot.events = static_cast<int64_t>(events.size());
  snapshot.pickle = PickleMemorySnapshot(events, live);
  return snapshot;
}

std::optional<OomEvent> TrackingAllocator::LastOom() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_oom_;
}

void TrackingAllocator::ClearLastOom() {
  std::lock_guard<std::mutex> lock(mutex_);
  last_oom_.reset();
}

}  // namespace memsweep::memory
