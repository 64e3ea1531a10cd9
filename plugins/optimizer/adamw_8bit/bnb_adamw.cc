#include "bnb_adamw.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <utility>

#include "blockwise_quant.h"
#include "bnb_update.h"
#include "memsweep/allocation_label.h"
#include "memsweep/compute_device.h"
#include "paged_state.h"

namespace memsweep::plugins::optimizer {
namespace {

bool EightBitFor(int64_t numel, const BnbAdamWOptions& options) {
  return options.bits == 8 && numel >= options.min_8bit_size;
}

bool PagedFor(int64_t numel, const BnbAdamWOptions& options) {
  return options.paged && numel >= kBnbPagedMinElements;
}

template <typename T>
at::Tensor OnDevice(const std::vector<T>& values, const at::TensorOptions& options) {
  if (options.device().is_meta()) {
    return at::empty({static_cast<int64_t>(values.size())}, options);
  }
  return at::tensor(at::ArrayRef<T>(values), options.device(c10::kCPU)).to(options.device());
}

}  // namespace

BnbStateBytes BnbTensorStateBytes(int64_t numel, const BnbAdamWOptions& options) {
  const bool eight = EightBitFor(numel, options);
  const int64_t moments = 2 * numel * (eight ? 1 : 4);
  const int64_t absmax = eight ? 2 * 4 * BnbBlocks(numel) : 0;
  if (PagedFor(numel, options)) return {absmax, moments};
  return {moments + absmax, 0};
}

BnbAdamW::BnbAdamW(std::vector<at::Tensor> tensors, BnbAdamWOptions options,
                   std::shared_ptr<int64_t> paged_bytes)
    : tensors_(std::move(tensors)),
      options_(options),
      states_(tensors_.size()),
      paged_bytes_(paged_bytes ? std::move(paged_bytes) : std::make_shared<int64_t>(0)) {}

at::Tensor BnbAdamW::Moment(const at::Tensor& p, at::ScalarType dtype, bool& paged) {
  paged = PagedFor(p.numel(), options_);
  if (!paged) return at::zeros_like(p, p.options().dtype(dtype));  // get_state_buffer
  at::Tensor t = PagedZeros(p.sizes(), dtype, p.device());
  *paged_bytes_ += static_cast<int64_t>(t.nbytes());
  return t;
}

// init_state: the maps go to the device at the first 8-bit tensor (name2qmap[...].to(p.device)),
// then state1, state2 and, for 8 bits, absmax1, absmax2.
void BnbAdamW::InitState(size_t i) {
  memsweep::memory::AllocationLabel label("optimizer state");
  const at::Tensor& p = tensors_[i];
  State& s = states_[i];
  if (!EightBitFor(p.numel(), options_)) {
    s.state1 = Moment(p, at::kFloat, s.paged1);
    s.state2 = Moment(p, at::kFloat, s.paged2);
    return;
  }
  if (maps_.empty()) {
    const at::TensorOptions floats = p.options().dtype(at::kFloat);
    maps_.push_back(OnDevice(BlockwiseCode::Get(true).map, floats));
    maps_.push_back(OnDevice(BlockwiseCode::Get(false).map, floats));
    // The device form looks codes up in the tables on the device (bitsandbytes' CUDA kernel
    // searches the map instead and keeps no table: 128 KiB more than it).
    if (memsweep::ComputeDevice(p) != c10::DeviceType::CPU) {
      const at::TensorOptions bytes = p.options().dtype(at::kByte);
      maps_.push_back(OnDevice(BlockwiseCode::Get(true).lut, bytes));
      maps_.push_back(OnDevice(BlockwiseCode::Get(false).lut, bytes));
    }
  }
  s.state1 = Moment(p, at::kByte, s.paged1);
  s.state2 = Moment(p, at::kByte, s.paged2);
  const at::TensorOptions floats = p.options().dtype(at::kFloat);
  s.absmax1 = at::zeros({BnbBlocks(p.numel())}, floats);
  s.absmax2 = at::zeros({BnbBlocks(p.numel())}, floats);
}

void BnbAdamW::Step(const OptimizerStepSpec& spec) {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const at::Tensor& p = tensors_[i];
    if (!p.grad().defined()) continue;
    TORCH_CHECK(p.is_contiguous(), "bitsandbytes' AdamW updates contiguous tensors only");
    if (!states_[i].state1.defined()) InitState(i);
    State& s = states_[i];
    ++s.step;
    if (s.paged1) PrefetchPaged(s.state1);  // prefetch_state
    if (s.paged2) PrefetchPaged(s.state2);
    const BnbHyper h{spec.lr, spec.beta1, spec.beta2, spec.eps, spec.weight_decay, s.step};
    const at::Tensor grad = p.grad().contiguous();
    const bool cpu = memsweep::ComputeDevice(p) == c10::DeviceType::CPU;
    if (s.EightBit()) {
      const EightBitMoments moments{s.state1, s.absmax1, s.state2, s.absmax2};
      if (cpu) {
        CpuUpdate8bit(p, grad, moments, h);
      } else {
        DeviceUpdate8bit(p, grad, moments, DeviceCodes{maps_[0], maps_[2], maps_[1], maps_[3]}, h);
      }
    } else if (cpu) {
      CpuUpdate32bit(p, grad, s.state1, s.state2, h);
    } else {
      DeviceUpdate32bit(p, grad, s.state1, s.state2, h);
    }
  }
}

std::vector<at::Tensor> BnbAdamW::StateTensors() const {
  std::vector<at::Tensor> state = maps_;
  for (const State& s : states_) {
    if (s.state1.defined() && !s.paged1) state.push_back(s.state1);
    if (s.state2.defined() && !s.paged2) state.push_back(s.state2);
    if (s.absmax1.defined()) state.push_back(s.absmax1);
    if (s.absmax2.defined()) state.push_back(s.absmax2);
  }
  return state;
}

}  // namespace memsweep::plugins::optimizer
