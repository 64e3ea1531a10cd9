// Paged optimizer state, as bitsandbytes' paged optimizers keep it (is_paged: get_paged,
// cget_managed_ptr): CUDA unified memory (cudaMallocManaged(..., cudaMemAttachHost)) that the
// driver moves to the GPU when a kernel touches it and back to the host when the GPU runs short.
// It is not allocated through LibTorch's CUDA caching allocator, so neither the device's
// allocated bytes nor torch.cuda.max_memory_allocated count it: the optimizer reports its bytes
// on its own (the step figure <plugin>.paged_state_bytes).
//
//   at::Tensor m = PagedZeros({4096, 4096}, at::kByte, p.device());  // cuda: managed memory
//   PrefetchPaged(m);  // before the update, as bitsandbytes' prefetch_state does
//
// On the meta device (memsweep estimate) the tensor's storage comes from no allocator, so that,
// as on CUDA, the device's figures leave it out. Other devices are refused.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace memsweep::plugins::optimizer {

// bitsandbytes pages a moment only from this many elements on (get_state_buffer: numel < 1e5
// stays in ordinary device memory).
inline constexpr int64_t kBnbPagedMinElements = 100000;

// Zero-filled, contiguous, on `device` (cuda or meta). Throws std::runtime_error for other
// devices, and on CUDA when this memsweep was built without CUDA.
at::Tensor PagedZeros(at::IntArrayRef sizes, at::ScalarType dtype, const c10::Device& device);
// Asks the driver to move a paged tensor to its GPU, on the current stream (a no-op on meta and
// on GPUs without concurrent managed access).
void PrefetchPaged(const at::Tensor& t);

}  // namespace memsweep::plugins::optimizer
