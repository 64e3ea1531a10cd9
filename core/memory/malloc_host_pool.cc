#include "core/memory/malloc_host_pool.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <new>

namespace memsweep::memory {

at::Tensor MallocHostPool::Empty(at::IntArrayRef sizes, c10::ScalarType dtype) {
  const int64_t bytes = BytesOf(sizes, dtype);
  void* data = std::malloc(static_cast<size_t>(bytes > 0 ? bytes : 1));
  if (data == nullptr) throw std::bad_alloc();
  return Counted(data, bytes, sizes, dtype, [data] { std::free(data); });
}

}  // namespace memsweep::memory
