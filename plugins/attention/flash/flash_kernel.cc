#include "flash_kernel.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "flash_tile_ops.h"

namespace memsweep::plugins::flash {
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

inline float ToFloat(float x) { return x; }
inline float ToFloat(c10::BFloat16 x) { return static_cast<float>(x); }
template <typename E>
inline E FromFloat(float x) { return static_cast<E>(x); }  // bf16: round to nearest even

// Where head h's rows of a [B, H, T, D] tensor live.
struct View {
  const void* data;
  int64_t sb, sh, st;
  explicit View(const at::Tensor& x)
      : data(x.data_ptr()), sb(x.stride(0)), sh(x.stride(1)), st(x.stride(2)) {}
  template <typename E>
  const E* Row(int64_t b, int64_t h, int64_t t) const {
    return static_cast<const E*>(data) + b * sb + h * sh + t * st;
  }
};

// dst[rows × ld] := multiplier · rows of x (stride st), columns d..ld zero.
template <typename E>
void PackRows(const E* x, int64_t st, int64_t rows, int64_t d, float multiplier, float* dst,
              int64_t ld) {
  for (int64_t i = 0; i < rows; ++i) {
    const E* src = x + i * st;
    float* out = dst + i * ld;
    for (int64_t c = 0; c < d; ++c) out[c] = ToFloat(src[c]) * multiplier;
    std::fill(out + d, out + ld, 0.0f);
  }
}

// dst[ld_rows × ld] := (rows of x)ᵀ, zero outside rows × d: dst[c][i] = x[i][c].
template <typename E>
void PackRowsTransposed(const E* x, int64_t st, int64_t rows, int64_t d, float* dst,
                        int64_t ld_rows, int64_t ld) {
  std::fill(dst, dst + ld_rows * ld, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    const E* src = x + i * st;
    for (int64_t c = 0; c < d; ++c) dst[c * ld + i] = ToFloat(src[c]);
  }
}

// Hides keys after each query (causal) and the padding columns beyond the tile's nk keys.
// Query row i is document position q0 + i, key column j is position k0 + j.
void MaskTile(float* s, int64_t lds, int64_t rows, int64_t q0, int64_t k0, int64_t nk,
              int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t first_hidden = std::clamp<int64_t>(q0 + i - k0 + 1, 0, nk);
    std::fill(s + i * lds + first_hidden, s + i * lds + cols, kMinusInf);
  }
}

struct Geometry {
  int64_t heads, kv_heads, d, d_pad, q_tile, k_tile, k_pad;
  float scale;
  const TileOps* ops;  // the tile operations for the chosen instruction set
  Geometry(const at::Tensor& q, const at::Tensor& k, TileSizes tiles, Isa isa)
      : heads(q.size(1)),
        kv_heads(k.size(1)),
        d(q.size(3)),
        d_pad(RoundUpToLanes(q.size(3))),
        q_tile(tiles.q_tile),
        k_tile(tiles.k_tile),
        k_pad(RoundUpToLanes(tiles.k_tile)),
        scale(static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.size(3))))),
        ops(&TileOpsFor(isa)) {}
  int64_t Group() const { return heads / kv_heads; }
};

// One thread's tile buffers, allocated through LibTorch (so memsweep's allocator counts them).
class Scratch {
 public:
  explicit Scratch(int64_t floats) : buffer_(at::empty({floats}, at::kFloat)) {}
  float* Take(int64_t floats) {
    float* p = buffer_.data_ptr<float>() + used_;
    used_ += floats;
    return p;
  }

 private:
  at::Tensor buffer_;
  int64_t used_ = 0;
};

struct TileItem {
  int64_t sequence, head, tile;
};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <typename E>
void ForwardImpl(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& out,
                 at::Tensor& lse, const std::vector<Sequence>& sequences, const Geometry& g) {
  std::vector<TileItem> items;
  for (int64_t s = 0; s < static_cast<int64_t>(sequences.size()); ++s) {
    for (int64_t h = 0; h < g.heads; ++h) {
      for (int64_t t = 0; t < CeilDiv(sequences[s].length, g.q_tile); ++t) items.push_back({s, h, t});
    }
  }
  const View qv(q), kv(k), vv(v), ov(out);
  float* lse_data = lse.data_ptr<float>();
  const int64_t lse_b = lse.stride(0), lse_h = lse.stride(1);
  const int64_t bq = g.q_tile, dp = g.d_pad, ldk = g.k_pad;

  at::parallel_for(0, static_cast<int64_t>(items.size()), 1, [&](int64_t begin, int64_t end) {
    Scratch scratch(2 * bq * dp + 2 * dp * ldk + bq * ldk + 2 * bq);
    float* qs = scratch.Take(bq * dp);   // scaled queries
    float* o = scratch.Take(bq * dp);    // output accumulator
    float* kt = scratch.Take(dp * ldk);  // keys, transposed
    float* vt = scratch.Take(ldk * dp);  // values
    float* s = scratch.Take(bq * ldk);   // scores, then probabilities
    float* row_max = scratch.Take(bq);
    float* row_sum = scratch.Take(bq);
    for (int64_t it = begin; it < end; ++it) {
      const TileItem& item = items[it];
      const Sequence& seq = sequences[item.sequence];
      const int64_t h = item.head, kvh = h / g.Group();
      const int64_t q0 = item.tile * bq, mq = std::min(bq, seq.length - q0);
      PackRows(qv.Row<E>(seq.batch, h, seq.start + q0), qv.st, mq, g.d, g.scale, qs, dp);
      std::fill(o, o + mq * dp, 0.0f);
      std::fill(row_max, row_max + mq, kMinusInf);
      std::fill(row_sum, row_sum + mq, 0.0f);
      const int64_t key_end = q0 + mq;  // causal: later key tiles are fully masked, skipped
      for (int64_t k0 = 0; k0 < key_end; k0 += g.k_tile) {
        const int64_t nk = std::min(g.k_tile, key_end - k0), nk_pad = RoundUpToLanes(nk);
        PackRowsTransposed(kv.Row<E>(seq.batch, kvh, seq.start + k0), kv.st, nk, g.d, kt, dp,
                           ldk);
        PackRows(vv.Row<E>(seq.batch, kvh, seq.start + k0), vv.st, nk, g.d, 1.0f, vt, dp);
        std::fill(vt + nk * dp, vt + nk_pad * dp, 0.0f);
        g.ops->gemm_nn(mq, nk_pad, dp, qs, dp, kt, ldk, s, ldk, /*accumulate=*/false);
        MaskTile(s, ldk, mq, q0, k0, nk, nk_pad);
        g.ops->online_softmax_step(mq, nk_pad, s, ldk, row_max, row_sum, o, dp, dp);
        g.ops->gemm_nn(mq, dp, nk_pad, s, ldk, vt, dp, o, dp, /*accumulate=*/true);
      }
      for (int64_t i = 0; i < mq; ++i) {
        const float inv = 1.0f / row_sum[i];
        E* dst = const_cast<E*>(ov.Row<E>(seq.batch, h, seq.start + q0 + i));
        for (int64_t c = 0; c < g.d; ++c) dst[c] = FromFloat<E>(o[i * dp + c] * inv);
        lse_data[seq.batch * lse_b + h * lse_h + seq.start + q0 + i] =
            row_max[i] + std::log(row_sum[i]);
      }
    }
  });
}

template <typename E>
void BackwardImpl(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const at::Tensor& out, const at::Tensor& lse, const at::Tensor& grad_out,
                  at::Tensor& dq_partial, at::Tensor& dk, at::Tensor& dv,
                  const std::vector<Sequence>& sequences, const Geometry& g) {
  std::vector<TileItem> items;  // (sequence, key/value head, key tile)
  for (int64_t s = 0; s < static_cast<int64_t>(sequences.size()); ++s) {
    for (int64_t h = 0; h < g.kv_heads; ++h) {
      for (int64_t t = 0; t < CeilDiv(sequences[s].length, g.k_tile); ++t) items.push_back({s, h, t});
    }
  }
  const View qv(q), kv(k), vv(v), ov(out), gv(grad_out), dkv(dk), dvv(dv);
  const float* lse_data = lse.data_ptr<float>();
  const int64_t lse_b = lse.stride(0), lse_h = lse.stride(1);
  const int64_t bq = g.q_tile, dp = g.d_pad, ldk = g.k_pad;
  float* dq_all = dq_partial.data_ptr<float>();
  const int64_t dq_thread = dq_partial.stride(0), dq_b = dq_partial.stride(1),
                dq_h = dq_partial.stride(2);

  at::parallel_for(0, static_cast<int64_t>(items.size()), 1, [&](int64_t begin, int64_t end) {
    Scratch scratch(5 * ldk * dp + 3 * bq * dp + 2 * bq * ldk + 2 * bq);
    float* kr = scratch.Take(ldk * dp);   // keys, row-major
    float* kt = scratch.Take(dp * ldk);   // keys, transposed
    float* vt = scratch.Take(dp * ldk);   // values, transposed
    float* dk_acc = scratch.Take(ldk * dp);
    float* dv_acc = scratch.Take(ldk * dp);
    float* qs = scratch.Take(bq * dp);    // scaled queries
    float* dout = scratch.Take(bq * dp);
    float* dq_tile = scratch.Take(bq * dp);
    float* p = scratch.Take(bq * ldk);    // probabilities
    float* ds = scratch.Take(bq * ldk);   // dP, then dS
    float* row_lse = scratch.Take(bq);
    float* delta = scratch.Take(bq);
    float* dq_mine = dq_all + at::get_thread_num() * dq_thread;
    for (int64_t it = begin; it < end; ++it) {
      const TileItem& item = items[it];
      const Sequence& seq = sequences[item.sequence];
      const int64_t kvh = item.head;
      const int64_t k0 = item.tile * g.k_tile, nk = std::min(g.k_tile, seq.length - k0);
      const int64_t nk_pad = RoundUpToLanes(nk);
      const E* k_rows = kv.Row<E>(seq.batch, kvh, seq.start + k0);
      PackRows(k_rows, kv.st, nk, g.d, 1.0f, kr, dp);
      std::fill(kr + nk * dp, kr + nk_pad * dp, 0.0f);
      PackRowsTransposed(k_rows, kv.st, nk, g.d, kt, dp, ldk);
      PackRowsTransposed(vv.Row<E>(seq.batch, kvh, seq.start + k0), vv.st, nk, g.d, vt, dp, ldk);
      std::fill(dk_acc, dk_acc + nk_pad * dp, 0.0f);
      std::fill(dv_acc, dv_acc + nk_pad * dp, 0.0f);
      for (int64_t h = kvh * g.Group(); h < (kvh + 1) * g.Group(); ++h) {
        // Query tiles with a row at or after k0 (earlier ones see none of these keys).
        for (int64_t q0 = k0 / bq * bq; q0 < seq.length; q0 += bq) {
          const int64_t mq = std::min(bq, seq.length - q0), row0 = seq.start + q0;
          PackRows(qv.Row<E>(seq.batch, h, row0), qv.st, mq, g.d, g.scale, qs, dp);
          PackRows(gv.Row<E>(seq.batch, h, row0), gv.st, mq, g.d, 1.0f, dout, dp);
          for (int64_t i = 0; i < mq; ++i) {
            const E* o_row = ov.Row<E>(seq.batch, h, row0 + i);
            float sum = 0.0f;
            for (int64_t c = 0; c < g.d; ++c) sum += dout[i * dp + c] * ToFloat(o_row[c]);
            delta[i] = sum;
            row_lse[i] = lse_data[seq.batch * lse_b + h * lse_h + row0 + i];
          }
          g.ops->gemm_nn(mq, nk_pad, dp, qs, dp, kt, ldk, p, ldk, false);  // S = (scale·Q)·Kᵀ
          MaskTile(p, ldk, mq, q0, k0, nk, nk_pad);
          g.ops->probabilities_from_scores(mq, nk_pad, p, ldk, 1.0f, row_lse);
          g.ops->gemm_tn(nk, dp, mq, p, ldk, dout, dp, dv_acc, dp, true);     // dV += Pᵀ·dO
          g.ops->gemm_nn(mq, nk_pad, dp, dout, dp, vt, ldk, ds, ldk, false);  // dP = dO·Vᵀ
          g.ops->score_gradient(mq, nk_pad, p, ldk, ds, ldk, delta, 1.0f);    // dS = P∘(dP − D)
          g.ops->gemm_tn(nk, dp, mq, ds, ldk, qs, dp, dk_acc, dp, true);        // dK += dSᵀ·(scale·Q)
          g.ops->gemm_nn(mq, dp, nk_pad, ds, ldk, kr, dp, dq_tile, dp, false);  // dS·K
          float* dq_rows = dq_mine + seq.batch * dq_b + h * dq_h + row0 * g.d;
          for (int64_t i = 0; i < mq; ++i) {
            for (int64_t c = 0; c < g.d; ++c) dq_rows[i * g.d + c] += g.scale * dq_tile[i * dp + c];
          }
        }
      }
      for (int64_t r = 0; r < nk; ++r) {
        E* dk_row = const_cast<E*>(dkv.Row<E>(seq.batch, kvh, seq.start + k0 + r));
        E* dv_row = const_cast<E*>(dvv.Row<E>(seq.batch, kvh, seq.start + k0 + r));
        for (int64_t c = 0; c < g.d; ++c) {
          dk_row[c] = FromFloat<E>(dk_acc[r * dp + c]);
          dv_row[c] = FromFloat<E>(dv_acc[r * dp + c]);
        }
      }
    }
  });
}

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

FlashOutputs FlashForward(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in,
                          const std::vector<Sequence>& sequences, TileSizes tiles, Isa isa) {
  const at::Tensor q = LastDimContiguous(q_in), k = LastDimContiguous(k_in),
                   v = LastDimContiguous(v_in);
  CheckInputs(q, k, v);
  const Geometry g(q, k, ResolveTileSizes(tiles, q.size(3)), isa);
  const int64_t b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3);
  // [B, T, H, D] storage: the model's next step (heads back into the hidden dimension) is a view.
  at::Tensor out = at::empty({b, t, h, d}, q.options()).transpose(1, 2);
  at::Tensor lse = at::empty({b, h, t}, q.options().dtype(at::kFloat));
  if (q.scalar_type() == at::kBFloat16) {
    ForwardImpl<c10::BFloat16>(q, k, v, out, lse, sequences, g);
  } else {
    ForwardImpl<float>(q, k, v, out, lse, sequences, g);
  }
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
  const Geometry g(q, k, ResolveTileSizes(tiles, q.size(3)), isa);
  const int64_t b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3);
  const int64_t threads = at::get_num_threads();
  at::Tensor dq_partial = at::zeros({threads, b, h, t, d}, q.options().dtype(at::kFloat));
  at::Tensor dk = at::empty({b, k.size(2), k.size(1), d}, k.options()).transpose(1, 2);
  at::Tensor dv = at::empty({b, v.size(2), v.size(1), d}, v.options()).transpose(1, 2);
  if (q.scalar_type() == at::kBFloat16) {
    BackwardImpl<c10::BFloat16>(q, k, v, LastDimContiguous(out), lse, grad_out, dq_partial, dk, dv,
                                sequences, g);
  } else {
    BackwardImpl<float>(q, k, v, LastDimContiguous(out), lse, grad_out, dq_partial, dk, dv,
                        sequences, g);
  }
  at::Tensor dq = threads == 1 ? dq_partial[0] : dq_partial.sum(0);
  dq_partial.reset();
  return {dq.to(q.scalar_type()), dk, dv};
}

}  // namespace memsweep::plugins::flash
