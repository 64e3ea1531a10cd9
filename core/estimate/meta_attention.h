// The attention kernel an estimate's scaled_dot_product_attention takes (docs/estimate.md): on
// meta tensors LibTorch's own choice is always the math kernel, which materialises the scores a
// fused kernel never holds. The estimate instead chooses as the device it stands for would —
// the CPU's flash kernel, or on CUDA FlashAttention-2 for 16-bit inputs and the memory-efficient
// kernel otherwise — and meta_kernels.cc's shape-only versions of those kernels allocate their
// outputs (and, for the CPU's, its scratch buffers).
#pragma once

#include <c10/core/DeviceType.h>

namespace memsweep::estimate {

// The device the meta device stands for in this process (default: the CPU). Installs the choice
// on first use.
void SetMetaTarget(c10::DeviceType target);
c10::DeviceType MetaTarget();

}  // namespace memsweep::estimate
