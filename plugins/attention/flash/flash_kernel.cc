#include "flash_kernel.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "flash_tile_ops.h"

namespace memsweep::plugins::flash {
namespace {

void CheckInputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
              "flash attention: q, k, v must be [B, heads, T, head_dim]");
  TORCH_CHECK(k.sizes() == v.sizes(), "flash attention: k and v shapes differ");
  TORCH_CHECK(q.size(0) == k.size(0) && q.size(2) == k.size(2) && q.size(3) == k.size(3),
              "flash attention: q and k disagree on batch, length or head_dim");
  TORCH_CHECK(k.size(1) > 0 && q.size(1) % k.size(1) == 0,
              "flash attention: query heads must be a multiple of key/value heads");
  TORCH_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(),
              "flash attention: q, k, v must share one dtype");
  TORCH_CHECK(q.scalar_type() == at::kFloat || q.scalar_type() == at::kBFloat16,
              "flash attention: dtype must be float32 or bfloat16");
  TORCH_CHECK(q.stride(3) == 1 && k.stride(3) == 1 && v.stride(3) == 1,
              "flash attention: head_dim must be contiguous");
}

at::Tensor LastDimContiguous(const at::Tensor& x) {
  return x.stride(-1) == 1 ? x : x.contiguous();
}

}  // namespace

int64_t L2CacheBytes() {
  const long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? bytes : int64_t{1} << 20;
}

int64_t BackwardScratchBytes(TileSizes tiles, int64_t head_dim) {
  const int64_t dp = RoundUpToLanes(head_dim), ldk = RoundUpToLanes(tiles.k_tile);
  const int64_t bq = tiles.q_tile;
  return 4 * (5 * ldk * dp + 3 * bq * dp + 2 * bq * ldk + 2 * bq);
}

TileSizes ResolveTileSizes(TileSizes requested, int64_t head_dim) {
  constexpr int64_t kLargest = 128, kSmallest = 16;
  TileSizes tiles{requested.q_tile > 0 ? requested.q_tile : kLargest,
                  requested.k_tile > 0 ? requested.k_tile : kLargest};
  const int64_t budget = L2CacheBytes() / 2;  // the rest: q/k/v rows streaming through
  while (BackwardScratchBytes(tiles, head_dim) > budget) {
    const bool shrink_k = requested.k_tile <= 0 && tiles.k_tile > kSmallest &&
                          (tiles.k_tile >= tiles.q_tile || requested.q_tile > 0);
    const bool shrink_q = requested.q_tile <= 0 && tiles.q_tile > kSmallest;
    if (shrink_k) {
      tiles.k_tile /= 2;
    } else if (shrink_q) {
      tiles.q_tile /= 2;
    } else {
      break;
    }
  }
  return tiles;
}

// The estimate's meta tensors (docs/estimate.md) have no data to run the tiles on: what the
// kernel allocates is its outputs and, while its parallel loop runs, one fp32 scratch buffer per
// chunk of work (as many as there are threads, or work items if fewer). Whole rows are taken as
// the sequences: the buffers' sizes do not depend on where documents start.
static void MetaScratch(int64_t items, int64_t floats) {
  std::vector<at::Tensor> buffers;
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), items));
  for (int64_t i = 0; i < chunks; ++i) {
    buffers.push_back(at::empty({floats}, at::TensorOptions().device(c10::kMeta).dtype(at::kFloat)));
  }
}

static int64_t Tiles(int64_t length, int64_t tile) { return (length + tile - 1) / tile; }

FlashOutputs FlashForward(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in,
                          const std::vector<Sequence>& sequences, TileSizes tiles, Isa isa) {
  const at::Tensor q = LastDimContiguous(q_in), k = LastDimContiguous(k_in),
                   v = LastDimContiguous(v_in);
  CheckInputs(q, k, v);
  const Geometry g(q, k, ResolveTileSizes(tiles, q.size(3)));
  const TileOps& ops = TileOpsFor(isa);
  const int64_t b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3);
  // [B, T, H, D] storage: the model's next step (heads back into the hidden dimension) is a view.
  at::Tensor out = at::empty({b, t, h, d}, q.options()).transpose(1, 2);
  at::Tensor lse = at::empty({b, h, t}, q.options().dtype(at::kFloat));
  if (q.is_meta()) {
    const int64_t bq = g.q_tile, dp = g.d_pad, ldk = g.k_pad;
    MetaScratch(b * h * Tiles(t, g.q_tile), 2 * bq * dp + 2 * dp * ldk + bq * ldk + 2 * bq);
    return {out, lse};
  }
  (q.scalar_type() == at::kBFloat16 ? ops.forward_bf16 : ops.forward_f32)(q, k, v, out, lse,
                                                                          sequences, g);
  return {out, lse};
}

FlashGrads FlashBackward(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in,
                         const at::Tensor& out, const at::Tensor& lse,
                         const at::Tensor& grad_out_in, const std::vector<Sequence>& sequences,
                         TileSizes tiles, Isa isa) {
  const at::Tensor q = LastDimContiguous(q_in), k = LastDimContiguous(k_in),
                   v = LastDimContiguous(v_in);
  const at::Tensor grad_out = LastDimContiguous(grad_out_in.to(q.scalar_type()));
  CheckInputs(q, k, v);
  const Geometry g(q, k, ResolveTileSizes(tiles, q.size(3)));
  const TileOps& ops = TileOpsFor(isa);
  const int64_t b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3);
  const int64_t threads = at::get_num_threads();
  at::Tensor dq_partial = at::zeros({threads, b, h, t, d}, q.options().dtype(at::kFloat));
  at::Tensor dk = at::empty({b, k.size(2), k.size(1), d}, k.options()).transpose(1, 2);
  at::Tensor dv = at::empty({b, v.size(2), v.size(1), d}, v.options()).transpose(1, 2);
  if (q.is_meta()) {
    const int64_t bq = g.q_tile, dp = g.d_pad, ldk = g.k_pad;
    MetaScratch(b * g.kv_heads * Tiles(t, g.k_tile),
                5 * ldk * dp + 3 * bq * dp + 2 * bq * ldk + 2 * bq);
  } else {
    (q.scalar_type() == at::kBFloat16 ? ops.backward_bf16 : ops.backward_f32)(
        q, k, v, LastDimContiguous(out), lse, grad_out, dq_partial, dk, dv, sequences, g);
  }
  at::Tensor dq = threads == 1 ? dq_partial[0] : dq_partial.sum(0);
  dq_partial.reset();
  return {dq.to(q.scalar_type()), dk, dv};
}

}  // namespace memsweep::plugins::flash
