#include "nf4.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <cmath>
#include <stdexcept>

#include "memsweep/compute_device.h"

namespace memsweep::plugins::adapter {
namespace {

// Nearest level by the midpoints between levels (a value on a midpoint takes the lower level,
// as torch.bucketize does in bitsandbytes' quantize_4bit).
at::Tensor NearestLevel(const at::Tensor& scaled, const std::vector<float>& levels) {
  std::vector<float> mids(levels.size() - 1);
  for (size_t i = 0; i + 1 < levels.size(); ++i) mids[i] = (levels[i] + levels[i + 1]) / 2.0f;
  const at::Tensor bounds = at::tensor(mids, scaled.options().dtype(at::kFloat));
  return at::bucketize(scaled, bounds, /*out_int32=*/true).to(at::kByte);
}

// Blockwise absmax of a flat fp32 tensor (the last block may be short) and the values scaled
// by it into [-1, 1] (multiplied by the reciprocal, as bitsandbytes does).
std::pair<at::Tensor, at::Tensor> ScaleBlocks(const at::Tensor& flat, int64_t block) {
  const int64_t n = flat.numel(), full = n / block * block;
  std::vector<at::Tensor> absmax, scaled;
  if (full > 0) {
    const at::Tensor blocks = flat.narrow(0, 0, full).view({-1, block});
    const at::Tensor m = blocks.abs().amax(1);
    absmax.push_back(m);
    scaled.push_back(at::clamp(blocks * (1.0 / m.clamp_min(1e-38)).unsqueeze(1), -1, 1).view(-1));
  }
  if (full < n) {
    const at::Tensor rest = flat.narrow(0, full, n - full);
    const at::Tensor m = rest.abs().amax().reshape({1});
    absmax.push_back(m);
    scaled.push_back(at::clamp(rest * (1.0 / m.clamp_min(1e-38)), -1, 1));
  }
  return {at::cat(absmax), at::cat(scaled)};
}

// Blockwise multiply of flat values by their block's scale.
at::Tensor Rescale(const at::Tensor& values, const at::Tensor& scales, int64_t block) {
  const int64_t n = values.numel(), full = n / block * block;
  if (full == n) return (values.view({-1, block}) * scales.unsqueeze(1)).view(-1);
  const int64_t blocks = full / block;
  return at::cat({(values.narrow(0, 0, full).view({-1, block}) *
                   scales.narrow(0, 0, blocks).unsqueeze(1)).view(-1),
                  values.narrow(0, full, n - full) * scales[blocks]});
}

// A meta tensor of `table`'s shape whose storage no allocator handed out (meta tensors are
// never read): it stands for the CPU table itself in an estimate of a CPU run, where the run
// uses the table as it is and allocates no copy.
at::Tensor MetaAlias(const at::Tensor& table) {
  // LibTorch's meta set_ asks for a resizable storage, which needs an allocator; it only records
  // the size, so this one is never called.
  struct NoAllocator final : c10::Allocator {
    c10::DataPtr allocate(size_t) override {
      throw std::logic_error("qlora: a meta table alias was asked to allocate");
    }
    void copy_data(void*, const void*, std::size_t) const override {}
  };
  static NoAllocator no_allocator;
  const c10::Device meta(c10::DeviceType::Meta);
  c10::Storage storage(c10::Storage::use_byte_size_t(), table.nbytes(), c10::DataPtr(nullptr, meta),
                       &no_allocator, /*resizable=*/true);
  return at::empty({0}, table.options().device(meta))
      .set_(storage, 0, table.sizes(), table.strides());
}

// `table` on `device`, copied there once per device: the products ask for it at every tile.
at::Tensor OnDevice(const at::Tensor& table, const c10::Device& device) {
  if (device.is_cpu()) return table;
  if (device.is_meta()) {
    at::Tensor alias = MetaAlias(table);
    if (memsweep::ComputeDevice(alias) == c10::DeviceType::CPU) return alias;
  }
  static std::mutex mutex;
  static std::map<std::pair<const void*, std::string>, at::Tensor> copies;
  std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& copy = copies[{table.unsafeGetTensorImpl(), device.str()}];
  if (!copy.defined()) copy = table.to(device);
  return copy;
}

// The two NF4 levels of every byte (high nibble first), fp32 [256, 2], on `device`.
at::Tensor BytePairs(const c10::Device& device) {
  static const at::Tensor kCpu = [] {
    std::vector<float> pairs;
    for (int byte = 0; byte < 256; ++byte) {
      pairs.push_back(Nf4Levels()[byte >> 4]);
      pairs.push_back(Nf4Levels()[byte & 15]);
    }
    return at::tensor(pairs).view({256, 2});
  }();
  return OnDevice(kCpu, device);
}

// The dynamic map as an fp32 tensor on `device`.
at::Tensor DynamicMapTensor(const c10::Device& device) {
  static const at::Tensor kCpu = at::tensor(DynamicMap());
  return OnDevice(kCpu, device);
}

}  // namespace

const std::vector<float>& Nf4Levels() {
  static const std::vector<float> kLevels = {
      -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
      -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
      0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
      0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};
  return kLevels;
}

const std::vector<float>& DynamicMap() {
  // create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for each exponent i,
  // 2^i + 1 fraction boundaries in [0.1, 1] (fp32 linspace), their means times 10^(i - 6), both
  // signs; then 0 and 1; sorted.
  static const std::vector<float> kMap = [] {
    std::vector<float> data;
    for (int i = 0; i < 7; ++i) {
      const int64_t items = (int64_t{1} << i) + 1;
      const at::Tensor bounds = at::linspace(0.1, 1.0, items, at::kFloat);
      const at::Tensor means = (bounds.narrow(0, 0, items - 1) + bounds.narrow(0, 1, items - 1)) / 2.0;
      // Python's (10 ** e) * means: an fp32 tensor times a scalar, as ATen computes it.
      const double scale = std::pow(10.0, -(7 - 1) + i);
      const at::Tensor pos = (means * scale).contiguous(), neg = (means * -scale).contiguous();
      for (int64_t k = 0; k < pos.numel(); ++k) {
        data.push_back(pos.data_ptr<float>()[k]);
        data.push_back(neg.data_ptr<float>()[k]);
      }
    }
    data.push_back(0.0f);
    data.push_back(1.0f);
    while (data.size() < 256) data.push_back(0.0f);
    std::sort(data.begin(), data.end());
    return data;
  }();
  return kMap;
}

Nf4Weight QuantizeNf4(const at::Tensor& weight, bool double_quant) {
  at::NoGradGuard no_grad;
  if (weight.numel() % 2 != 0) {
    throw std::invalid_argument("NF4 needs an even number of values (two codes per byte)");
  }
  Nf4Weight q;
  q.shape = weight.sizes().vec();
  const at::Tensor flat = weight.detach().reshape(-1).to(at::kFloat);
  auto [absmax, scaled] = ScaleBlocks(flat, kNf4Block);
  const at::Tensor codes = NearestLevel(scaled, Nf4Levels());
  q.codes = at::bitwise_or(at::bitwise_left_shift(codes.slice(0, 0, c10::nullopt, 2), 4),
                           codes.slice(0, 1, c10::nullopt, 2))
                .contiguous();
  if (!double_quant) {
    q.absmax_scales = absmax.contiguous();
    return q;
  }
  // Double quantisation: mean subtracted, blocks of 256, nearest of the dynamic map.
  q.offset = absmax.mean().reshape({1});
  auto [scales, scaled_absmax] = ScaleBlocks(absmax - q.offset, kAbsmaxBlock);
  q.absmax_scales = scales.contiguous();
  // Nearest by midpoints (the dynamic map has ties only between its padding zeros).
  q.absmax_codes = NearestLevel(scaled_absmax, DynamicMap()).contiguous();
  return q;
}

at::Tensor DequantizeAbsmax(const Nf4Weight& q) {
  if (!q.absmax_codes.defined()) return q.absmax_scales;
  const at::Tensor map = DynamicMapTensor(q.absmax_scales.device());
  const at::Tensor values = map.index_select(0, q.absmax_codes.to(at::kLong));
  return Rescale(values, q.absmax_scales, kAbsmaxBlock) + q.offset;
}

at::Tensor DequantizeNf4Rows(const Nf4Weight& q, const at::Tensor& absmax, int64_t row,
                             int64_t rows, c10::ScalarType dtype) {
  const int64_t columns = q.shape.size() == 2 ? q.shape[1] : static_cast<int64_t>(q.codes.numel() * 2);
  const int64_t first = row * columns, count = rows * columns;
  if (first % kNf4Block != 0) {
    throw std::invalid_argument("DequantizeNf4Rows: rows must start on a 64-value block");
  }
  // Each byte looks up its two levels at once (a 256 x 2 table, int32 indices): the tile's
  // temporaries are 4 bytes per byte of codes and the fp32 values, scaled in place.
  const at::Tensor bytes = q.codes.narrow(0, first / 2, count / 2);
  at::Tensor values = BytePairs(absmax.device()).index_select(0, bytes.to(at::kInt)).view(-1);
  const int64_t first_block = first / kNf4Block;
  const int64_t blocks = (count + kNf4Block - 1) / kNf4Block;
  const at::Tensor scales = absmax.narrow(0, first_block, blocks);
  if (count % kNf4Block == 0) {
    values.view({-1, kNf4Block}).mul_(scales.unsqueeze(1));
  } else {
    values = Rescale(values, scales, kNf4Block);
  }
  return values.view({rows, columns}).to(dtype);
}

at::Tensor DequantizeNf4(const Nf4Weight& q, c10::ScalarType dtype) {
  const int64_t rows = q.shape.size() == 2 ? q.shape[0] : 1;
  return DequantizeNf4Rows(q, DequantizeAbsmax(q), 0, rows, dtype).reshape(q.shape);
}

}  // namespace memsweep::plugins::adapter
