// One tensor's bitsandbytes AdamW update (optimizer "adam" of bitsandbytes 0.50.2), in place, in
// the arithmetic of bitsandbytes' CPU backend (backends/cpu/ops.py):
//   m ← β1·m + (1 − β1)·g;  v ← β2·v + (1 − β2)·g²;
//   c1 = 1 − β1^t;  c2 = √(1 − β2^t)
//   8-bit:  p ← p·(1 − lr·wd) (wd > 0);  p ← p − lr/c1 · m / (√v / c2 + eps)
//   32-bit: p ← p·(1 − lr·wd) (wd > 0);  p ← p + (−lr·c2/c1) · m / (√v + eps·c2)
// the 8-bit moments dequantised before and requantised after with new absmax values
// (blockwise_quant.h). (bitsandbytes' CUDA kernels decay the weights after the step instead —
// p ← (p + step)·(1 − lr·wd) — and pick 8-bit codes by an exact nearest search, keeping a
// moment's sign; an update differs from the CPU backend's by O(lr²·wd) and rounding.)
//
// Two forms of the same arithmetic:
//   Cpu*: bitsandbytes' CPU backend op for op, with its temporaries (whole-tensor fp32 copies of
//     the moments, the gradient, the denominator), so the peak is the CPU backend's and the
//     bits are too (the same ATen kernels, in the same order);
//   Device*: chunk by chunk (kDeviceChunk elements), for CUDA, where bitsandbytes' fused kernels
//     allocate nothing: at most 16 bytes per element of a chunk (bnb_device_update.cc). The
//     codes are found with the same 65,536-bin table, on the device; its bin is computed with
//     two roundings where the CPU's fused multiply-add has one, so a code now and then is the
//     neighbour of the CPU form's.
// Both run on meta tensors (memsweep estimate), allocating what they allocate on their device.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace memsweep::plugins::optimizer {

struct BnbHyper {
  double lr = 0.0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  int64_t step = 1;  // the tensor's own update count, 1 first
};

// Elements per chunk of the device form: a multiple of the 256-value block.
inline constexpr int64_t kDeviceChunk = int64_t{1} << 20;

// p: contiguous, any float dtype; g: p's shape; m, v: fp32, contiguous.
void CpuUpdate32bit(const at::Tensor& p, const at::Tensor& g, const at::Tensor& m,
                    const at::Tensor& v, const BnbHyper& h);
void DeviceUpdate32bit(const at::Tensor& p, const at::Tensor& g, const at::Tensor& m,
                       const at::Tensor& v, const BnbHyper& h, int64_t chunk = kDeviceChunk);

// The 8-bit moments: codes (uint8, p's shape) and absmax (fp32, ceil(numel / 256)) of each.
struct EightBitMoments {
  at::Tensor codes1, absmax1;  // exp_avg, signed dynamic map
  at::Tensor codes2, absmax2;  // exp_avg_sq, unsigned dynamic map
};
void CpuUpdate8bit(const at::Tensor& p, const at::Tensor& g, const EightBitMoments& s,
                   const BnbHyper& h);
// map1, map2: the maps as fp32 [256] tensors on p's device; lut1, lut2: their code tables,
// uint8 [65536] on p's device.
struct DeviceCodes {
  at::Tensor map1, lut1, map2, lut2;
};
void DeviceUpdate8bit(const at::Tensor& p, const at::Tensor& g, const EightBitMoments& s,
                      const DeviceCodes& codes, const BnbHyper& h, int64_t chunk = kDeviceChunk);

// The device form's blockwise (de)quantisation of flat, contiguous tensors (whole tensors on
// their device), for tests: values → codes and absmax; codes and absmax → fp32 values.
void DeviceQuantize(const at::Tensor& values, const at::Tensor& lut, const at::Tensor& codes,
                    const at::Tensor& absmax);
at::Tensor DeviceDequantize(const at::Tensor& codes, const at::Tensor& absmax,
                            const at::Tensor& map);

}  // namespace memsweep::plugins::optimizer
