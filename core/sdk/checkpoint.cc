// memsweep/checkpoint.h: the checkpointing helpers of the SDK.
#include "memsweep/checkpoint.h"

#include "memsweep/autocast.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Generator.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <ATen/core/grad_mode.h>

#include <memory>
#include <mutex>
#include <utility>
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
  state.meta_autocast_enabled = AutocastEnabled(c10::DeviceType::Meta);
  state.meta_autocast_dtype = AutocastDtype(c10::DeviceType::Meta);
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
  SetAutocast(c10::DeviceType::Meta, meta_autocast_enabled, meta_autocast_dtype);
}

RecomputeGuard::RecomputeGuard(const ForwardState& forward)
    : saved_(ForwardState::Capture()),
      forward_autocast_(forward.autocast_enabled || forward.meta_autocast_enabled) {
  forward.Apply();
}

RecomputeGuard::~RecomputeGuard() {
  // A recompute under autocast fills LibTorch's autocast cache with low-precision copies of the
  // weights. Left there, the next forward would reuse them after the optimizer step has changed
  // the weights (found by loss-equivalence verification: bf16 + full checkpointing drifted from
  // bf16 alone from step 1 on).
  if (forward_autocast_) ClearAutocastCache();
  saved_.Apply();
}

namespace {

// Everything besides the saved tensors that the recompute needs. Lives as long as the graph
// node (held in the autograd context as a capsule).
struct Recompute : torch::CustomClassHolder {
  CheckpointedFn fn;
  size_t num_inputs = 0;
  std::vector<at::Tensor> parameters;  // the tensors fn reads besides its inputs
  ForwardState forward_state;
};

// Inputs: fn's inputs, the parameters fn reads (so that autograd routes their gradients through
// this node), the recompute state (not a tensor: its gradient is undefined).
struct CheckpointedFunction : torch::autograd::Function<CheckpointedFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, at::TensorList inputs,
                            at::TensorList /*parameters*/,
                            const c10::intrusive_ptr<Recompute>& state) {
    state->forward_state = ForwardState::Capture();
    at::Tensor out;
    {
      at::NoGradGuard no_grad;
      out = state->fn(inputs.vec());
    }
    ctx->save_for_backward(inputs.vec());
    ctx->saved_data["recompute"] = c10::IValue::make_capsule(state);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const auto state = c10::static_intrusive_pointer_cast<Recompute>(
        ctx->saved_data.at("recompute").toCapsule());
    const size_t n = state->num_inputs;
    // Differentiate with respect to every input and parameter that wants a gradient.
    torch::autograd::variable_list inputs(n);
    torch::autograd::variable_list wrt;
    std::vector<size_t> slot;  // position of each wrt entry in the result
    for (size_t i = 0; i < n; ++i) {
      const bool needs_grad = ctx->needs_input_grad(i);
      inputs[i] = saved[i].detach().requires_grad_(needs_grad);
      if (needs_grad) {
        wrt.push_back(inputs[i]);
        slot.push_back(i);
      }
    }
    const std::vector<at::Tensor>& parameters = state->parameters;
    for (size_t i = 0; i < parameters.size(); ++i) {
      const at::Tensor& parameter = parameters[i];
      if (parameter.requires_grad() && ctx->needs_input_grad(n + i)) {
        wrt.push_back(parameter);
        slot.push_back(n + i);
      }
    }
    at::Tensor out;
    {
      RecomputeGuard forward_state(state->forward_state);
      at::AutoGradMode grad_enabled(true);
      out = state->fn(inputs);
    }
    // Every input, every parameter, the state.
    torch::autograd::variable_list result(n + parameters.size() + 1);
    if (wrt.empty() || !out.requires_grad()) return result;
    const torch::autograd::variable_list grads =
        torch::autograd::grad({out}, wrt, {grad_outputs[0]}, /*retain_graph=*/false,
                              /*create_graph=*/false, /*allow_unused=*/true);
    for (size_t i = 0; i < grads.size(); ++i) result[slot[i]] = grads[i];
    return result;
  }
};

}  // namespace

at::Tensor RunCheckpointed(CheckpointedFn fn, const std::vector<at::Tensor>& inputs,
                           const std::vector<at::Tensor>& parameters) {
  if (!at::GradMode::is_enabled()) return fn(inputs);
  auto state = c10::make_intrusive<Recompute>();
  state->fn = std::move(fn);
  state->num_inputs = inputs.size();
  state->parameters = parameters;
  return CheckpointedFunction::apply(at::TensorList(inputs), at::TensorList(parameters), state);
}

at::Tensor RunBlockCheckpointed(model::Block& block, const at::Tensor& x, const at::Tensor& cos,
                                const at::Tensor& sin, const model::AttentionInputs& inputs,
                                const model::AttentionFn& attention) {
  // The closure keeps the block alive as long as the graph (Share() is empty for a block not
  // owned by a shared_ptr: its owner keeps it).
  auto run = [owner = block.Share(), b = &block, inputs, attention](
                 const std::vector<at::Tensor>& t) {
    return b->Forward(t[0], t[1], t[2], inputs, attention);
  };
  return RunCheckpointed(std::move(run), {x, cos, sin}, block.Parameters());
}

}  // namespace memsweep::checkpoint
