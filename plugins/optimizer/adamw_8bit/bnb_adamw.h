// BnbAdamW: bitsandbytes' AdamW (bitsandbytes 0.50.2, optim.Optimizer2State("adam")) as the
// optimizer slot's update — AdamW8bit / PagedAdamW8bit (bits = 8) and AdamW32bit /
// PagedAdamW32bit (bits = 32), what transformers' optim="adamw_bnb_8bit", "paged_adamw_8bit"
// and "paged_adamw_32bit" make. The optimizer/adamw_8bit and optimizer/adamw_32bit plugins.
//
// State per tensor, created at its first update (init_state):
//   8-bit (bits = 8 and numel >= min_8bit_size): state1, state2 uint8 codes of the tensor's
//     shape (exp_avg with the signed dynamic map, exp_avg_sq with the unsigned one) and absmax1,
//     absmax2 fp32 [ceil(numel / 256)]; the two 256-float maps once per optimizer, on the
//     device, made at the first 8-bit tensor;
//   otherwise: state1, state2 fp32 of the tensor's shape.
//   Paged: state1 and state2 of tensors of at least 100,000 elements in CUDA unified memory
//   (paged_state.h), outside the device's allocator; everything else as without paging.
//
// The update (per tensor, its own step count, as bitsandbytes keeps it):
//   on the CPU, bitsandbytes' CPU backend (backends/cpu/ops.py) op for op: the moments
//     dequantised into fp32 tensors, AdamW in ATen ops, requantised with new absmax values —
//     the same temporaries, so the same peak, and the same bits;
//   on CUDA, the same arithmetic chunk by chunk (bnb_device_update.h), so that the temporaries
//     stay within a few chunk-sized tensors where bitsandbytes' fused kernels have none.
// memsweep estimate (the meta device) allocates what the device it stands for allocates.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "memsweep/optimizer.h"

namespace memsweep::plugins::optimizer {

struct BnbAdamWOptions {
  int bits = 8;                  // 8 (AdamW8bit) or 32 (AdamW32bit)
  int64_t min_8bit_size = 4096;  // tensors with fewer elements keep fp32 moments
  bool paged = false;            // moments of >= 100,000 elements in CUDA unified memory
};

// The state bytes bitsandbytes allocates for one tensor of `numel` elements, in and outside the
// device's allocator (paged), the shared maps not included.
struct BnbStateBytes {
  int64_t device = 0;
  int64_t paged = 0;
};
BnbStateBytes BnbTensorStateBytes(int64_t numel, const BnbAdamWOptions& options);
// The two 256-float maps an 8-bit optimizer keeps once (2 KiB).
inline constexpr int64_t kBnbMapBytes = 2 * 256 * 4;

class BnbAdamW final : public memsweep::Optimizer {
 public:
  // paged_bytes, when given, follows the bytes of paged state held (for the plugin's figure).
  BnbAdamW(std::vector<at::Tensor> tensors, BnbAdamWOptions options,
           std::shared_ptr<int64_t> paged_bytes = nullptr);
  void Step(const OptimizerStepSpec& spec) override;
  // What the device's allocator holds: paged moments are left out (PagedBytes has them).
  std::vector<at::Tensor> StateTensors() const override;
  int64_t PagedBytes() const { return *paged_bytes_; }

  // One tensor's state, for tests.
  struct State {
    at::Tensor state1, state2;    // fp32 moments, or uint8 codes
    at::Tensor absmax1, absmax2;  // 8-bit only
    bool paged1 = false, paged2 = false;
    int64_t step = 0;
    bool EightBit() const { return absmax1.defined(); }
  };
  const State& StateOf(size_t i) const { return states_[i]; }
  // The maps (and on CUDA the code tables) on the device: undefined before the first 8-bit state.
  const std::vector<at::Tensor>& Maps() const { return maps_; }

 private:
  void InitState(size_t i);
  at::Tensor Moment(const at::Tensor& p, at::ScalarType dtype, bool& paged);

  std::vector<at::Tensor> tensors_;
  BnbAdamWOptions options_;
  std::vector<State> states_;
  std::vector<at::Tensor> maps_;  // qmap1, qmap2 [, their code tables on CUDA]
  std::shared_ptr<int64_t> paged_bytes_;
};

}  // namespace memsweep::plugins::optimizer
