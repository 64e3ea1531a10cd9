// The estimate's device (docs/estimate.md): tensors on LibTorch's meta device have sizes, dtypes
// and strides but no data, and every operation with a meta kernel computes only its output's
// shape. InstallMetaTracking makes the tracking allocator (tracking_allocator.h) serve every
// meta tensor's storage as it serves the CPU device's: the same counters, the same budget and the
// allocator slot's backend, so a training step run on meta tensors produces the allocation stream
// — sizes, order, lifetimes, autograd's saved tensors included — of the same step on real ones.
//
// The bytes a backend hands out for a meta storage are address space the kernels never touch
// (no meta kernel reads or writes data): the pages are never faulted in, so estimating a 7B model
// needs neither its memory nor its arithmetic.
#pragma once

namespace memsweep::memory {

// Idempotent; for the process's life (only `memsweep estimate` and tests use the meta device).
void InstallMetaTracking();

}  // namespace memsweep::memory
