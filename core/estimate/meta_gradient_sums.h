// The autograd engine's gradient sums on the meta device (docs/estimate.md). When a tensor gets
// gradients from two places (a tied embedding and LM head, say), the engine adds them before it
// hands the sum on; on a CPU or CUDA tensor it adds in place when it holds the only reference to
// one of the two (InputBuffer's accumulate), on a meta tensor never: LibTorch counts meta tensors
// as "subclass-like" and always forms a new sum — one tensor of the gradient's size more, for a
// moment, than the run it stands for. While a ScopedInPlaceGradientSums lives, such sums of meta
// tensors are made in place under the conditions a real device's would be, and every other
// addition keeps LibTorch's meta kernel. The estimate holds one for the whole run.
#pragma once

#include <cstdint>
#include <memory>

namespace torch {
class Library;
}

namespace memsweep::estimate {

class ScopedInPlaceGradientSums {
 public:
  ScopedInPlaceGradientSums();
  ~ScopedInPlaceGradientSums();
  ScopedInPlaceGradientSums(const ScopedInPlaceGradientSums&) = delete;
  ScopedInPlaceGradientSums& operator=(const ScopedInPlaceGradientSums&) = delete;

 private:
  std::unique_ptr<torch::Library> library_;
  uint64_t callback_ = 0;
};

}  // namespace memsweep::estimate
