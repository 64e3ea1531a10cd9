// bitsandbytes' blockwise 8-bit quantisation of optimizer state (bitsandbytes 0.50.2): values in
// blocks of 256, each block scaled by its absolute maximum (fp32) into [-1, 1] and coded as the
// index of a value of a 256-entry dynamic map (functional.create_dynamic_map: signed for the
// first moment, unsigned for the second). Codes are found as bitsandbytes' CPU backend finds
// them (csrc/cpu_ops.cpp, quantize_cpu_impl): through a table of 65,536 bins over [-1, 1], each
// holding the map entry nearest to its bin's value — not always the nearest entry to the value
// itself, bit for bit what bitsandbytes stores on the CPU.
//
//   const BlockwiseCode& code = BlockwiseCode::Get(/*is_signed=*/true);
//   QuantizeBlockwise(values, n, code, absmax, codes);    // absmax: ceil(n / 256) floats
//   DequantizeBlockwise(codes, absmax, code, values, n);
#pragma once

#include <cstdint>
#include <vector>

namespace memsweep::plugins::optimizer {

inline constexpr int64_t kBnbBlock = 256;        // values per absmax (BLOCKSIZE_2STATE)
inline constexpr int64_t kBnbLutBins = 65536;    // bins of the CPU backend's code table

inline int64_t BnbBlocks(int64_t n) { return (n + kBnbBlock - 1) / kBnbBlock; }

// One dynamic map and its lookup table.
struct BlockwiseCode {
  std::vector<float> map;    // 256 values, ascending (create_dynamic_map(signed=...))
  std::vector<uint8_t> lut;  // kBnbLutBins codes: build_quantize_lut
  // The process's maps (made once, with ATen's CPU linspace as bitsandbytes makes them).
  static const BlockwiseCode& Get(bool is_signed);
};

// The bin of a value already scaled into [-1, 1] (clamped): norm_to_lut_index, with the
// fused multiply-add its compiled form uses.
uint16_t LutBin(float scaled);

// n values → ceil(n / 256) absmax values and n codes (a block of zeros codes as 0).
void QuantizeBlockwise(const float* values, int64_t n, const BlockwiseCode& code, float* absmax,
                       uint8_t* codes);
// n codes and their blocks' absmax → n values: map[code] · absmax.
void DequantizeBlockwise(const uint8_t* codes, const float* absmax, const BlockwiseCode& code,
                         float* values, int64_t n);

}  // namespace memsweep::plugins::optimizer
