// Activation checkpointing helpers that the checkpointing slot's plugins build on, compiled once
// into libmemsweep: any computation run checkpointed (RunCheckpointed), whole-block checkpointing
// as a ready BlockRunner (RunBlockCheckpointed), and what a recompute in backward must reproduce
// from the forward (ForwardState, RecomputeGuard).
//
//   model::BlockRunner runner = memsweep::checkpoint::RunBlockCheckpointed;  // keeps only x
//
//   // A recompute of one's own (an autograd function that runs part of a block again):
//   ForwardState forward = ForwardState::Capture();   // in forward, before running the part
//   ...
//   { RecomputeGuard guard(forward); at::AutoGradMode grad(true); out = part(saved_inputs); }
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "memsweep/attention.h"
#include "memsweep/model.h"

namespace memsweep::checkpoint {

// A snapshot of the CPU generator and the autocast settings of every device (the model draws no
// random numbers on CUDA): what a recompute must see to compute what the forward computed.
struct ForwardState {
  at::Tensor generator_state;  // at::Generator::get_state(): a uint8 CPU tensor
  bool autocast_enabled = false;
  at::ScalarType autocast_dtype = at::kBFloat16;
  bool cuda_autocast_enabled = false;
  at::ScalarType cuda_autocast_dtype = at::kHalf;
  bool meta_autocast_enabled = false;  // the estimate's meta device (memsweep/autocast.h)
  at::ScalarType meta_autocast_dtype = at::kBFloat16;

  static ForwardState Capture();
  void Apply() const;
};

// For the lifetime of the guard the forward's generator and autocast state are in effect; the
// state found on entry (the backward's) is restored on exit, so a recompute neither consumes
// random numbers of the ongoing run nor leaks the forward's autocast setting. On exit after an
// autocast recompute it also clears LibTorch's autocast weight cache, which would otherwise hand
// the next forward low-precision copies of weights the optimizer has since changed.
class RecomputeGuard {
 public:
  explicit RecomputeGuard(const ForwardState& forward);
  ~RecomputeGuard();
  RecomputeGuard(const RecomputeGuard&) = delete;
  RecomputeGuard& operator=(const RecomputeGuard&) = delete;

 private:
  ForwardState saved_;
  bool forward_autocast_;
};

// A computation to run checkpointed: it must compute the same from the same inputs every time.
using CheckpointedFn = std::function<at::Tensor(const std::vector<at::Tensor>& inputs)>;

// fn(inputs) without recording its graph, keeping only `inputs` for backward, where fn runs again
// with the graph recorded (under a RecomputeGuard) and is backpropagated through to the inputs
// that need a gradient and to `parameters` (the tensors fn reads besides its inputs, e.g. weights,
// so that their gradients flow). fn, and what it captures, lives as long as the graph. Without
// grad mode fn simply runs.
at::Tensor RunCheckpointed(CheckpointedFn fn, const std::vector<at::Tensor>& inputs,
                           const std::vector<at::Tensor>& parameters = {});

// A BlockRunner built on RunCheckpointed: the block runs without recording its graph, only x (and the shared cos/sin) is
// kept for backward, where the block runs again with the graph recorded (under the forward's
// generator and autocast state) and is backpropagated through. Without grad mode the block
// simply runs.
at::Tensor RunBlockCheckpointed(model::Block& block, const at::Tensor& x, const at::Tensor& cos,
                                const at::Tensor& sin, const model::AttentionInputs& inputs,
                                const model::AttentionFn& attention);

}  // namespace memsweep::checkpoint
