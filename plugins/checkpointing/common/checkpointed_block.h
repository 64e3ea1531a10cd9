// Whole-block activation checkpointing: a custom autograd function that runs a decoder block
// without recording its graph, keeps only the block's inputs, and in backward runs the block
// again with the graph recorded and backpropagates through it.
//
//   model->SetBlockRunner(memsweep::plugins::checkpointing::RunBlockCheckpointed);
//
// Header-only: shared by checkpointing/full and checkpointing/every_k, each of which is its own
// shared library.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/autograd.h>

#include <memory>
#include <vector>

#include "forward_state.h"
#include "memsweep/model.h"

namespace memsweep::plugins::checkpointing {

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

// A BlockRunner: the block's output, with only x (and the shared cos/sin) kept for backward.
// Without grad mode the block simply runs.
inline at::Tensor RunBlockCheckpointed(model::Block& block, const at::Tensor& x,
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

}  // namespace memsweep::plugins::checkpointing
