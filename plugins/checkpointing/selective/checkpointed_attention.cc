#include "checkpointed_attention.h"

#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <utility>

#include "memsweep/checkpoint.h"

namespace memsweep::plugins::checkpointing {
namespace {

// What the recompute needs besides q, k, v; held by the autograd context as a capsule.
struct AttentionRecompute : torch::CustomClassHolder {
  model::AttentionFn attention;
  model::AttentionInputs inputs;
  checkpoint::ForwardState forward_state;
};

// Inputs: q, k, v, the recompute state (not a tensor: its gradient is undefined).
struct CheckpointedAttentionFunction
    : torch::autograd::Function<CheckpointedAttentionFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& q,
                            const at::Tensor& k, const at::Tensor& v,
                            const c10::intrusive_ptr<AttentionRecompute>& state) {
    state->forward_state = checkpoint::ForwardState::Capture();
    at::Tensor out;
    {
      at::NoGradGuard no_grad;
      out = state->attention(q, k, v, state->inputs);
    }
    ctx->save_for_backward({q, k, v});
    ctx->saved_data["recompute"] = c10::IValue::make_capsule(state);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const auto state = c10::static_intrusive_pointer_cast<AttentionRecompute>(
        ctx->saved_data.at("recompute").toCapsule());
    torch::autograd::variable_list detached(3);
    torch::autograd::variable_list wrt;
    std::vector<size_t> slot;
    for (size_t i = 0; i < 3; ++i) {
      const bool needs_grad = ctx->needs_input_grad(i);
      detached[i] = saved[i].detach().requires_grad_(needs_grad);
      if (needs_grad) {
        wrt.push_back(detached[i]);
        slot.push_back(i);
      }
    }
    at::Tensor out;
    {
      checkpoint::RecomputeGuard forward_state(state->forward_state);
      at::AutoGradMode grad_enabled(true);
      out = state->attention(detached[0], detached[1], detached[2], state->inputs);
    }
    torch::autograd::variable_list result(4);  // q, k, v, the state
    if (wrt.empty() || !out.requires_grad()) return result;
    const torch::autograd::variable_list grads =
        torch::autograd::grad({out}, wrt, {grad_outputs[0]}, /*retain_graph=*/false,
                              /*create_graph=*/false, /*allow_unused=*/true);
    for (size_t i = 0; i < grads.size(); ++i) result[slot[i]] = grads[i];
    return result;
  }
};

}  // namespace

model::AttentionFn CheckpointAttention(model::AttentionFn attention) {
  return [attention = std::move(attention)](const at::Tensor& q, const at::Tensor& k,
                                            const at::Tensor& v,
                                            const model::AttentionInputs& inputs) {
    if (!at::GradMode::is_enabled()) return attention(q, k, v, inputs);
    auto state = c10::make_intrusive<AttentionRecompute>();
    state->attention = attention;
    state->inputs = inputs;
    return CheckpointedAttentionFunction::apply(q, k, v, state);
  };
}

at::Tensor RunBlockWithCheckpointedAttention(model::Block& block, const at::Tensor& x,
                                             const at::Tensor& cos, const at::Tensor& sin,
                                             const model::AttentionInputs& inputs,
                                             const model::AttentionFn& attention) {
  return block.Forward(x, cos, sin, inputs, CheckpointAttention(attention));
}

}  // namespace memsweep::plugins::checkpointing
