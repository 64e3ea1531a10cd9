// memsweep/checkpoint.h: the checkpointing helpers of the SDK.
#include "memsweep/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Generator.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <memory>
#include <mutex>
#include <vector>

namespace memsweep::checkpoint {

ForwardState ForwardState::Capture() {
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

void ForwardState::Apply() const {
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

RecomputeGuard::RecomputeGuard(const ForwardState& forward)
    : saved_(ForwardState::Capture()), forward_autocast_(forward.autocast_enabled) {
  forward.Apply();
}

RecomputeGuard::~RecomputeGuard() {
  // A recompute under autocast fills LibTorch's autocast cache with low-precision copies of the
  // weights. Left there, the next forward would reuse them after the optimizer step has changed
  // the weights (found by loss-equivalence verification: bf16 + full checkpointing drifted from
  // bf16 alone from step 1 on).
  if (forward_autocast_) at::autocast::clear_cache();
  saved_.Apply();
}

namespace {

// Everything besides the saved tensors that the recompute needs. Lives as long as the graph
// node (held in the autograd context as a capsule).
struct BlockRecompute : torch::CustomClassHolder {
  std::shared_ptr<model::Block> owner;      // keeps the block alive while the graph exists
  model::Block* block = nullptr;
  model::AttentionInputs inputs;
  model::AttentionFn attention;
  ForwardState forward_state;
};

// Inputs: x, cos, sin (tensors), the block's parameters (so that autograd routes their
// gradients through this node), the recompute state (not a tensor: its gradient is undefined).
struct CheckpointedBlockFunction : torch::autograd::Function<CheckpointedBlockFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& cos, const at::Tensor& sin,
                            at::TensorList /*parameters*/,
                            const c10::intrusive_ptr<BlockRecompute>& state) {
    state->forward_state = ForwardState::Capture();
    at::Tensor out;
    {
      at::NoGradGuard no_grad;
      out = state->block->Forward(x, cos, sin, state->inputs, state->attention);
    }
    ctx->save_for_backward({x, cos, sin});
    ctx->saved_data["recompute"] = c10::IValue::make_capsule(state);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const auto state = c10::static_intrusive_pointer_cast<BlockRecompute>(
        ctx->saved_data.at("recompute").toCapsule());
    const std::vector<at::Tensor> parameters = state->block->Parameters();
    const bool x_needs_grad = ctx->needs_input_grad(0);
    const at::Tensor x = saved[0].detach().requires_grad_(x_needs_grad);

    at::Tensor out;
    {
      RecomputeGuard forward_state(state->forward_state);
      at::AutoGradMode grad_enabled(true);
      out = state->block->Forward(x, saved[1], saved[2], state->inputs, state->attention);
    }

    // Differentiate with respect to x and every parameter that wants a gradient.
    torch::autograd::variable_list wrt;
    std::vector<size_t> slot;  // position of each wrt entry in the result
    if (x_needs_grad) {
      wrt.push_back(x);
      slot.push_back(0);
    }
    for (size_t i = 0; i < parameters.size(); ++i) {
      if (parameters[i].requires_grad() && ctx->needs_input_grad(3 + i)) {
        wrt.push_back(parameters[i]);
        slot.push_back(3 + i);
      }
    }
    // x, cos, sin, every parameter, the state.
    torch::autograd::variable_list result(3 + parameters.size() + 1);
    if (wrt.empty() || !out.requires_grad()) return result;
    const torch::autograd::variable_list grads =
        torch::autograd::grad({out}, wrt, {grad_outputs[0]}, /*retain_graph=*/false,
                              /*create_graph=*/false, /*allow_unused=*/true);
    for (size_t i = 0; i < grads.size(); ++i) result[slot[i]] = grads[i];
    return result;
  }
};

}  // namespace

at::Tensor RunBlockCheckpointed(model::Block& block, const at::Tensor& x,
                                       const at::Tensor& cos, const at::Tensor& sin,
                                       const model::AttentionInputs& inputs,
                                       const model::AttentionFn& attention) {
  if (!at::GradMode::is_enabled()) return block.Forward(x, cos, sin, inputs, attention);
  auto state = c10::make_intrusive<BlockRecompute>();
  state->owner = block.Share();  // empty for a block not owned by a shared_ptr: its owner keeps it
  state->block = &block;
  state->inputs = inputs;
  state->attention = attention;
  const std::vector<at::Tensor> parameters = block.Parameters();
  return CheckpointedBlockFunction::apply(x, cos, sin, at::TensorList(parameters), state);
}

}  // namespace memsweep::checkpoint
