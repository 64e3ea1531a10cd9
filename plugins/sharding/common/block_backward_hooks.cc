#include "block_backward_hooks.h"

#include <torch/autograd.h>

#include <cstdint>

namespace memsweep::sharding {

// The identity autograd node of MarkBlockInput (kBegins false) and MarkBlockOutput (true); only
// they instantiate it, so it lives here rather than in the header.
namespace detail {

template <bool kBegins>
struct BlockBackwardHook : torch::autograd::Function<BlockBackwardHook<kBegins>> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            int64_t listener, int64_t block) {
    ctx->saved_data["listener"] = listener;
    ctx->saved_data["block"] = block;
    return x;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* listener = reinterpret_cast<BlockBackwardListener*>(ctx->saved_data["listener"].toInt());
    const auto block = static_cast<size_t>(ctx->saved_data["block"].toInt());
    if (kBegins) {
      listener->BlockBackwardBegins(block);
    } else {
      listener->BlockBackwardEnds(block);
    }
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

}  // namespace detail

at::Tensor MarkBlockInput(const at::Tensor& x, BlockBackwardListener* listener, size_t block) {
  if (!x.requires_grad()) return x;
  return detail::BlockBackwardHook<false>::apply(x, reinterpret_cast<int64_t>(listener),
                                                 static_cast<int64_t>(block));
}

at::Tensor MarkBlockOutput(const at::Tensor& out, BlockBackwardListener* listener, size_t block) {
  if (!out.requires_grad()) return out;
  return detail::BlockBackwardHook<true>::apply(out, reinterpret_cast<int64_t>(listener),
                                                static_cast<int64_t>(block));
}

}  // namespace memsweep::sharding
