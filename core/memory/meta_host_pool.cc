#include "core/memory/meta_host_pool.h"

#include <ATen/ATen.h>

namespace memsweep::memory {
namespace {
// Every meta tensor of the pool points here: no kernel reads a meta tensor's data.
char meta_anchor;
}  // namespace

at::Tensor MetaHostPool::Empty(at::IntArrayRef sizes, c10::ScalarType dtype) {
  return Counted(&meta_anchor, BytesOf(sizes, dtype), sizes, dtype, [] {}, c10::kMeta);
}

}  // namespace memsweep::memory
