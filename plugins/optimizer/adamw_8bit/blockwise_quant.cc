#include "blockwise_quant.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

namespace memsweep::plugins::optimizer {
namespace {

// create_dynamic_map(signed, max_exponent_bits=7, total_bits=8): for each exponent i, the means
// of consecutive fp32 linspace(0.1, 1) boundaries (2^i + 1 of them signed, 2^(i+1) + 1
// unsigned) times 10^(i - 6), with both signs when signed; then 0 and 1; sorted.
std::vector<float> MakeDynamicMap(bool is_signed) {
  std::vector<float> data;
  for (int i = 0; i < 7; ++i) {
    const int64_t items = (int64_t{1} << (is_signed ? i : i + 1)) + 1;
    const at::Tensor bounds = at::linspace(0.1, 1.0, items, at::kFloat);
    const at::Tensor means =
        (bounds.narrow(0, 0, items - 1) + bounds.narrow(0, 1, items - 1)) / 2.0;
    // Python's (10 ** e) * means: an fp32 tensor times a scalar, as ATen computes it.
    const double scale = std::pow(10.0, -(7 - 1) + i);
    const at::Tensor pos = (means * scale).contiguous();
    data.insert(data.end(), pos.data_ptr<float>(), pos.data_ptr<float>() + pos.numel());
    if (is_signed) {
      const at::Tensor neg = (means * -scale).contiguous();
      data.insert(data.end(), neg.data_ptr<float>(), neg.data_ptr<float>() + neg.numel());
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  data.resize(256, 0.0f);
  std::sort(data.begin(), data.end());
  return data;
}

// build_quantize_lut: bin i stands for -1 + 2i / 65535; its code is the first map entry whose
// upper midpoint is not below that value.
std::vector<uint8_t> MakeLut(const std::vector<float>& map) {
  std::vector<float> mids(255);
  for (int i = 0; i < 255; ++i) mids[i] = 0.5f * (map[i] + map[i + 1]);
  std::vector<uint8_t> lut(kBnbLutBins);
  int code = 0;
  for (int64_t i = 0; i < kBnbLutBins; ++i) {
    const float value = (2.0f * static_cast<float>(i)) / static_cast<float>(kBnbLutBins - 1) - 1.0f;
    while (code < 255 && mids[code] < value) ++code;
    lut[i] = static_cast<uint8_t>(code);
  }
  return lut;
}

}  // namespace

const BlockwiseCode& BlockwiseCode::Get(bool is_signed) {
  static const BlockwiseCode kSigned = [] {
    BlockwiseCode c;
    c.map = MakeDynamicMap(true);
    c.lut = MakeLut(c.map);
    return c;
  }();
  static const BlockwiseCode kUnsigned = [] {
    BlockwiseCode c;
    c.map = MakeDynamicMap(false);
    c.lut = MakeLut(c.map);
    return c;
  }();
  return is_signed ? kSigned : kUnsigned;
}

uint16_t LutBin(float scaled) {
  const float v = std::clamp(scaled, -1.0f, 1.0f);
  // bitsandbytes' (v + 1) * 0.5f * 65535 + 0.5f, compiled (gcc, avx2+fma) as one fused
  // multiply-add after the first two roundings; truncated like vcvttss2si.
  const float half = (v + 1.0f) * 0.5f;
  const float bin = std::fma(half, static_cast<float>(kBnbLutBins - 1), 0.5f);
  return static_cast<uint16_t>(static_cast<int32_t>(bin));
}

void QuantizeBlockwise(const float* values, int64_t n, const BlockwiseCode& code, float* absmax,
                       uint8_t* codes) {
  const uint8_t* lut = code.lut.data();
  at::parallel_for(0, BnbBlocks(n), 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t lo = b * kBnbBlock, hi = std::min(lo + kBnbBlock, n);
      float m = 0.0f;
      for (int64_t i = lo; i < hi; ++i) m = std::max(m, std::fabs(values[i]));
      absmax[b] = m;
      if (m == 0.0f) {
        std::fill(codes + lo, codes + hi, uint8_t{0});
        continue;
      }
      const float inv = 1.0f / m;  // multiplied, as bitsandbytes does: not a division
      for (int64_t i = lo; i < hi; ++i) codes[i] = lut[LutBin(values[i] * inv)];
    }
  });
}

void DequantizeBlockwise(const uint8_t* codes, const float* absmax, const BlockwiseCode& code,
                         float* values, int64_t n) {
  const float* map = code.map.data();
  at::parallel_for(0, BnbBlocks(n), 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t lo = b * kBnbBlock, hi = std::min(lo + kBnbBlock, n);
      const float scale = absmax[b];
      for (int64_t i = lo; i < hi; ++i) values[i] = map[codes[i]] * scale;
    }
  });
}

}  // namespace memsweep::plugins::optimizer
