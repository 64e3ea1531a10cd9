// The shape of one flash attention call as the kernel's loops use it: heads, head dimension
// (padded to whole vectors), tile sizes and the softmax scale.
#pragma once

#include <ATen/core/Tensor.h>

#include <cmath>
#include <cstdint>

#include "flash_tile_ops.h"

namespace memsweep::plugins::flash {

// Query rows and key rows per tile; 0 = chosen from the L2 cache size (ResolveTileSizes).
struct TileSizes {
  int64_t q_tile = 0;
  int64_t k_tile = 0;
};

struct Geometry {
  int64_t heads, kv_heads, d, d_pad, q_tile, k_tile, k_pad;
  float scale;
  Geometry(const at::Tensor& q, const at::Tensor& k, TileSizes tiles)
      : heads(q.size(1)),
        kv_heads(k.size(1)),
        d(q.size(3)),
        d_pad(RoundUpToLanes(q.size(3))),
        q_tile(tiles.q_tile),
        k_tile(tiles.k_tile),
        k_pad(RoundUpToLanes(tiles.k_tile)),
        scale(static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.size(3))))) {}
  int64_t Group() const { return heads / kv_heads; }
};

}  // namespace memsweep::plugins::flash
