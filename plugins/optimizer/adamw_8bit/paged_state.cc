// Compiled with MEMSWEEP_CUDA_BUILD=1 in a build with CUDA (plugin.cmake), as core's CUDA code is.
#include "paged_state.h"

#ifndef MEMSWEEP_CUDA_BUILD
#define MEMSWEEP_CUDA_BUILD 0
#endif

#include <ATen/ATen.h>
#include <c10/util/accumulate.h>
#include <c10/util/strides.h>

#include <algorithm>

#include <stdexcept>

#if MEMSWEEP_CUDA_BUILD
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace memsweep::plugins::optimizer {
namespace {

// A meta tensor whose storage no allocator handed out: the estimate's stand-in for managed
// memory, which the device's allocator does not see either. (LibTorch's meta set_ asks for a
// resizable storage, which needs an allocator; it only records the size, so this one is never
// called.)
at::Tensor MetaStandIn(at::IntArrayRef sizes, at::ScalarType dtype) {
  struct NoAllocator final : c10::Allocator {
    c10::DataPtr allocate(size_t) override {
      throw std::logic_error("paged optimizer state: a meta stand-in was asked to allocate");
    }
    void copy_data(void*, const void*, std::size_t) const override {}
  };
  static NoAllocator no_allocator;
  const c10::Device meta(c10::DeviceType::Meta);
  const int64_t nbytes =
      c10::multiply_integers(sizes) * static_cast<int64_t>(c10::elementSize(dtype));
  c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes, c10::DataPtr(nullptr, meta),
                       &no_allocator, /*resizable=*/true);
  return at::empty({0}, at::TensorOptions().dtype(dtype).device(meta))
      .set_(storage, 0, sizes, c10::contiguous_strides(sizes));
}

#if MEMSWEEP_CUDA_BUILD
at::Tensor ManagedZeros(at::IntArrayRef sizes, at::ScalarType dtype, const c10::Device& device) {
  c10::cuda::CUDAGuard guard(device);
  const int64_t nbytes =
      c10::multiply_integers(sizes) * static_cast<int64_t>(c10::elementSize(dtype));
  void* ptr = nullptr;
  C10_CUDA_CHECK(cudaMallocManaged(&ptr, static_cast<size_t>(std::max<int64_t>(nbytes, 1)),
                                   cudaMemAttachHost));
  // cudaFree waits for the kernels still using the memory; a deleter cannot report an error.
  at::Tensor t = at::from_blob(
      ptr, sizes, [](void* p) { (void)cudaFree(p); },
      at::TensorOptions().dtype(dtype).device(device), device);
  t.zero_();  // bitsandbytes: F.fill(buff, 0)
  return t;
}
#endif

}  // namespace

at::Tensor PagedZeros(at::IntArrayRef sizes, at::ScalarType dtype, const c10::Device& device) {
  if (device.is_meta()) return MetaStandIn(sizes, dtype);
  if (!device.is_cuda()) {
    throw std::runtime_error("paged optimizer state lives in CUDA unified memory; on " +
                             device.str() + " use paged = false");
  }
#if MEMSWEEP_CUDA_BUILD
  return ManagedZeros(sizes, dtype, device);
#else
  throw std::runtime_error("paged optimizer state needs a memsweep built with CUDA");
#endif
}

void PrefetchPaged(const at::Tensor& t) {
  if (!t.is_cuda()) return;
#if MEMSWEEP_CUDA_BUILD
  // bitsandbytes' cprefetch: only where the GPU can access managed memory concurrently.
  const int device = t.device().index();
  int concurrent = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device));
  if (concurrent == 0) return;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
#if CUDART_VERSION >= 13000
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  location.id = device;
  C10_CUDA_CHECK(cudaMemPrefetchAsync(t.data_ptr(), t.nbytes(), location, 0u, stream));
#else
  C10_CUDA_CHECK(cudaMemPrefetchAsync(t.data_ptr(), t.nbytes(), device, stream));
#endif
#endif
}

}  // namespace memsweep::plugins::optimizer
