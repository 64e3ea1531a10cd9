// MetaHostPool: the HostPool (memsweep/host_pool.h) of a run on the meta device (the estimate,
// docs/estimate.md): offloaded tensors are meta tensors — sizes and no data — outside the tracking
// allocator, so they count in the pool's bytes and peak (host_pool_peak_bytes) and never in the
// device's, as the real pools' do, and estimating a cell that offloads tens of GB takes none.
#pragma once

#include "core/memory/counting_host_pool.h"

namespace memsweep::memory {

class MetaHostPool final : public CountingHostPool {
 public:
  at::Tensor Empty(at::IntArrayRef sizes, c10::ScalarType dtype) override;
};

}  // namespace memsweep::memory
