// What a recompute in backward must reproduce from the forward: the CPU generator's state (so
// dropout and any other random op draws the same numbers) and the autocast state (so the same
// ops run in the same dtype). Header-only: shared by the checkpointing plugins, each of which is
// its own shared library.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <mutex>

namespace memsweep::plugins::checkpointing {

// A snapshot of the CPU generator and the autocast settings of both devices (the model draws no
// random numbers on CUDA).
struct ForwardState {
  at::Tensor generator_state;  // at::Generator::get_state(): a uint8 CPU tensor
  bool autocast_enabled = false;
  at::ScalarType autocast_dtype = at::kBFloat16;
  bool cuda_autocast_enabled = false;
  at::ScalarType cuda_autocast_dtype = at::kHalf;

  static ForwardState Capture() {
    ForwardState state;
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      state.generator_state = generator.get_state();
    }
    state.autocast_enabled = at::autocast::is_autocast_enabled(at::kCPU);
    state.autocast_dtype = at::autocast::get_autocast_dtype(at::kCPU);
    state.cuda_autocast_enabled = at::autocast::is_autocast_enabled(at::kCUDA);
    state.cuda_autocast_dtype = at::autocast::get_autocast_dtype(at::kCUDA);
    return state;
  }

  void Apply() const {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(generator_state);
    }
    at::autocast::set_autocast_enabled(at::kCPU, autocast_enabled);
    at::autocast::set_autocast_dtype(at::kCPU, autocast_dtype);
    at::autocast::set_autocast_enabled(at::kCUDA, cuda_autocast_enabled);
    at::autocast::set_autocast_dtype(at::kCUDA, cuda_autocast_dtype);
  }
};

// For the lifetime of the guard the forward's generator and autocast state are in effect; the
// state found on entry (the backward's) is restored on exit, so a recompute neither consumes
// random numbers of the ongoing run nor leaks the forward's autocast setting.
class RecomputeGuard {
 public:
  explicit RecomputeGuard(const ForwardState& forward)
      : saved_(ForwardState::Capture()), forward_autocast_(forward.autocast_enabled) {
    forward.Apply();
  }
  ~RecomputeGuard() {
    // A recompute under autocast fills LibTorch's autocast cache with low-precision copies of
    // the weights. Left there, the next forward would reuse them after the optimizer step has
    // changed the weights (found by loss-equivalence verification: bf16 + full checkpointing
    // drifted from bf16 alone from step 1 on).
    if (forward_autocast_) at::autocast::clear_cache();
    saved_.Apply();
  }
  RecomputeGuard(const RecomputeGuard&) = delete;
  RecomputeGuard& operator=(const RecomputeGuard&) = delete;

 private:
  ForwardState saved_;
  bool forward_autocast_;
};

}  // namespace memsweep::plugins::checkpointing
