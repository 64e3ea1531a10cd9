// NF4 (Dettmers et al., 2023), bit for bit as bitsandbytes stores it: a weight in blocks of 64
// values, each block scaled by its absolute maximum and every value rounded to the nearest of
// the 16 NF4 levels (bitsandbytes' table), two 4-bit codes per byte, the first in the high
// nibble. Double quantisation stores the absmax values themselves in 8 bits: their mean
// subtracted (`offset`), then in blocks of 256 scaled by their own absmax (fp32) and rounded to
// the nearest of bitsandbytes' 256-value signed dynamic map.
//
//   Nf4Weight q = QuantizeNf4(weight);              // weight: any float dtype, numel % 2 == 0
//   at::Tensor w = DequantizeNf4(q, at::kBFloat16);  // the same shape as weight
//
// Bytes per weight value: 0.5 for the codes, 1/64 for the absmax codes, 4/(64·256) for the
// second-level absmax, and 4 for the offset once per weight (≈ 0.516 in all).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace memsweep::plugins::adapter {

constexpr int64_t kNf4Block = 64;        // values per absmax
constexpr int64_t kAbsmaxBlock = 256;    // absmax values per second-level absmax

struct Nf4Weight {
  at::Tensor codes;          // uint8 [numel / 2]: two NF4 codes per byte
  at::Tensor absmax_codes;   // uint8 [ceil(numel / 64)]: the absmax values, 8-bit
  at::Tensor absmax_scales;  // fp32 [ceil(absmax blocks / 256)]: their blocks' absmax
  at::Tensor offset;         // fp32 [1]: the absmax values' mean, subtracted before coding
  // Without double quantisation absmax_codes and offset are undefined and absmax_scales holds
  // the fp32 absmax of every 64-value block.
  std::vector<int64_t> shape;
};

// bitsandbytes' NF4 levels (functional.get_4bit_type("nf4")), ascending.
const std::vector<float>& Nf4Levels();
// bitsandbytes' signed dynamic 8-bit map (functional.create_dynamic_map()), ascending.
const std::vector<float>& DynamicMap();

// On the weight's device; its values are read in fp32.
Nf4Weight QuantizeNf4(const at::Tensor& weight, bool double_quant = true);
// The absmax of each 64-value block, from the double-quantised form (fp32).
at::Tensor DequantizeAbsmax(const Nf4Weight& q);
// Rows [row, row + rows) of the weight ([rows, columns] of a 2-D weight), in `dtype`, from the
// codes and the per-block absmax `absmax` (DequantizeAbsmax). Needs columns % 64 == 0 when the
// rows do not start at 0 (blocks do not straddle rows).
at::Tensor DequantizeNf4Rows(const Nf4Weight& q, const at::Tensor& absmax, int64_t row,
                             int64_t rows, c10::ScalarType dtype);
// The whole weight, in `dtype`.
at::Tensor DequantizeNf4(const Nf4Weight& q, c10::ScalarType dtype);

}  // namespace memsweep::plugins::adapter
