// The device form of bnb_update.h: the CPU backend's arithmetic over chunks of the flat tensors,
// each chunk a whole number of 256-value blocks but the last. Temporaries per chunk of L
// elements, at their highest (fp32 p and g; a bf16 p or g adds its fp32 copy, 4L each):
//   32-bit: the denominator and the update: 8L bytes;
//   8-bit:  both dequantised moments (8L) and the int64 table bins of exp_avg's requantisation
//           (8L; ATen's indexing takes int64 indices: a narrower index would be widened to
//           int64 beside itself), with a zero-block mask and absmax reciprocals (5 bytes per
//           block): 16L + 5·ceil(L / 256) bytes — 16 MiB for a chunk of 2^20 elements.
// Every op has a meta kernel, so an estimate that stands for CUDA runs this same code.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "blockwise_quant.h"
#include "bnb_update.h"

namespace memsweep::plugins::optimizer {
namespace {

void ChunkWriteBack(const at::Tensor& p, const at::Tensor& p_fp32) {
  if (!p_fp32.is_alias_of(p)) p.copy_(p_fp32);
}

// values (flat) ·= scales, one scale per 256-value block (the last block may be short).
void ChunkScaleByBlock(const at::Tensor& values, const at::Tensor& scales) {
  const int64_t n = values.numel(), full = n / kBnbBlock * kBnbBlock;
  if (full > 0) {
    values.narrow(0, 0, full)
        .view({-1, kBnbBlock})
        .mul_(scales.narrow(0, 0, full / kBnbBlock).unsqueeze(1));
  }
  if (full < n) values.narrow(0, full, n - full).mul_(scales.narrow(0, full / kBnbBlock, 1));
}

// The absolute maximum of each block of `values` (flat) into `absmax`.
void ChunkBlockAbsmax(const at::Tensor& values, const at::Tensor& absmax) {
  const int64_t n = values.numel(), full = n / kBnbBlock * kBnbBlock;
  const double inf = std::numeric_limits<double>::infinity();
  if (full > 0) {
    at::Tensor out = absmax.narrow(0, 0, full / kBnbBlock);
    at::linalg_vector_norm_out(out, values.narrow(0, 0, full).view({-1, kBnbBlock}), inf, {1});
  }
  if (full < n) {
    at::Tensor out = absmax.narrow(0, full / kBnbBlock, 1);
    at::linalg_vector_norm_out(out, values.narrow(0, full, n - full).view({1, -1}), inf, {1});
  }
}

// Codes → fp32 values: map[code] · absmax of the code's block.
at::Tensor ChunkDequantize(const at::Tensor& codes, const at::Tensor& absmax,
                           const at::Tensor& map) {
  at::Tensor values;
  {
    const at::Tensor index = codes.to(at::kLong);  // a uint8 index would read as a mask
    values = at::index(map, c10::List<std::optional<at::Tensor>>({index}));
  }
  ChunkScaleByBlock(values, absmax);
  return values;
}

// values (flat, fp32; taken, and released once its bins exist) → absmax (its blocks' absolute
// maxima) and codes: the table's code of the bin of values · (1 / absmax), clamped to [-1, 1];
// a block of zeros codes as 0.
void ChunkQuantize(at::Tensor values, const at::Tensor& lut, const at::Tensor& codes_out,
              const at::Tensor& absmax_out) {
  ChunkBlockAbsmax(values, absmax_out);
  const at::Tensor zero_blocks = absmax_out.eq(0);
  at::Tensor inverse = at::reciprocal(absmax_out);
  inverse.masked_fill_(zero_blocks, 0.0);
  ChunkScaleByBlock(values, inverse);
  values.clamp_(-1.0, 1.0).add_(1.0).mul_(0.5).mul_(static_cast<double>(kBnbLutBins - 1)).add_(0.5);
  at::Tensor codes;
  {
    const at::Tensor bins = values.to(at::kLong);  // truncation, as bitsandbytes' cast
    values.reset();
    codes = at::index(lut, c10::List<std::optional<at::Tensor>>({bins}));
  }
  const int64_t n = codes.numel(), full = n / kBnbBlock * kBnbBlock;
  if (full > 0) {
    codes.narrow(0, 0, full).view({-1, kBnbBlock})
        .masked_fill_(zero_blocks.narrow(0, 0, full / kBnbBlock).unsqueeze(1), 0);
  }
  if (full < n) {
    codes.narrow(0, full, n - full).masked_fill_(zero_blocks.narrow(0, full / kBnbBlock, 1), 0);
  }
  codes_out.copy_(codes);
}

at::Tensor ChunkFlat(const at::Tensor& t) { return t.view({-1}); }

}  // namespace

void DeviceUpdate32bit(const at::Tensor& p, const at::Tensor& g, const at::Tensor& m,
                       const at::Tensor& v, const BnbHyper& h, int64_t chunk) {
  const double correction1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double correction2 = std::sqrt(1.0 - std::pow(h.beta2, static_cast<double>(h.step)));
  const double step_size = -h.lr * correction2 / correction1;
  const at::Tensor pf = ChunkFlat(p), gf = ChunkFlat(g), mf = ChunkFlat(m), vf = ChunkFlat(v);
  const int64_t n = pf.numel();
  for (int64_t off = 0; off < n; off += chunk) {
    const int64_t len = std::min(chunk, n - off);
    const at::Tensor m_c = mf.narrow(0, off, len), v_c = vf.narrow(0, off, len);
    const at::Tensor p_c = pf.narrow(0, off, len);
    const at::Tensor g_float = gf.narrow(0, off, len).to(at::kFloat);  // · gnorm_scale 1
    m_c.mul_(h.beta1).add_(g_float, 1.0 - h.beta1);
    v_c.mul_(h.beta2).addcmul_(g_float, g_float, 1.0 - h.beta2);
    const at::Tensor p_float = p_c.to(at::kFloat);
    if (h.weight_decay > 0.0) p_float.mul_(1.0 - h.lr * h.weight_decay);
    at::Tensor denom = at::sqrt(v_c);
    denom.add_(h.eps * correction2);
    at::Tensor update = at::div(m_c, denom);
    denom.reset();
    p_float.add_(update, step_size);
    update.reset();
    ChunkWriteBack(p_c, p_float);
  }
}

void DeviceUpdate8bit(const at::Tensor& p, const at::Tensor& g, const EightBitMoments& s,
                      const DeviceCodes& codes, const BnbHyper& h, int64_t chunk) {
  const double correction1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double correction2 = std::sqrt(1.0 - std::pow(h.beta2, static_cast<double>(h.step)));
  const at::Tensor pf = ChunkFlat(p), gf = ChunkFlat(g);
  const at::Tensor c1 = ChunkFlat(s.codes1), c2 = ChunkFlat(s.codes2);
  const int64_t n = pf.numel();
  for (int64_t off = 0; off < n; off += chunk) {
    const int64_t len = std::min(chunk, n - off);
    const int64_t block0 = off / kBnbBlock, blocks = BnbBlocks(len);
    const at::Tensor c1_c = c1.narrow(0, off, len), c2_c = c2.narrow(0, off, len);
    const at::Tensor a1_c = s.absmax1.narrow(0, block0, blocks);
    const at::Tensor a2_c = s.absmax2.narrow(0, block0, blocks);
    at::Tensor m = ChunkDequantize(c1_c, a1_c, codes.map1);
    at::Tensor v = ChunkDequantize(c2_c, a2_c, codes.map2);
    {
      const at::Tensor g_float = gf.narrow(0, off, len).to(at::kFloat);  // · gnorm_scale 1
      m.mul_(h.beta1).add_(g_float, 1.0 - h.beta1);
      v.mul_(h.beta2).addcmul_(g_float, g_float, 1.0 - h.beta2);
    }
    {
      at::Tensor denom = at::sqrt(v);
      denom.div_(correction2).add_(h.eps);
      const at::Tensor p_c = pf.narrow(0, off, len);
      const at::Tensor p_float = p_c.to(at::kFloat);
      if (h.weight_decay > 0.0) p_float.mul_(1.0 - h.lr * h.weight_decay);
      p_float.addcdiv_(m, denom, -h.lr / correction1);
      denom.reset();
      ChunkWriteBack(p_c, p_float);
    }
    ChunkQuantize(std::move(m), codes.lut1, c1_c, a1_c);
    ChunkQuantize(std::move(v), codes.lut2, c2_c, a2_c);
  }
}

void DeviceQuantize(const at::Tensor& values, const at::Tensor& lut, const at::Tensor& codes,
                    const at::Tensor& absmax) {
  ChunkQuantize(ChunkFlat(values).clone(), lut, ChunkFlat(codes), absmax);
}

at::Tensor DeviceDequantize(const at::Tensor& codes, const at::Tensor& absmax,
                            const at::Tensor& map) {
  return ChunkDequantize(ChunkFlat(codes), absmax, map);
}

}  // namespace memsweep::plugins::optimizer
