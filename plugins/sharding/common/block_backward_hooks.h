// Backward hooks around a decoder block, for the ZeRO plugins: two identity autograd nodes, one on
// the block's output and one on its input. In backward, the output's node runs before any of the
// block's own nodes (they all need its gradient), and the input's node runs after all of them:
// the CPU autograd engine runs ready nodes highest sequence number first, and every node of the
// block was created after the input's node, so none is left when it runs. Between the two, the
// block's parameters receive their gradients.
//
//   at::Tensor in = MarkBlockInput(x, listener, b);      // BlockBackwardEnds(b) in backward
//   at::Tensor out = MarkBlockOutput(run(in), listener, b);  // BlockBackwardBegins(b)
//
// A block whose input needs no gradient (a frozen embedding) gets no end hook: callers must
// finish such blocks at the end of the backward stage.
#pragma once

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <cstddef>
#include <cstdint>

namespace memsweep::sharding {

class BlockBackwardListener {
 public:
  virtual void BlockBackwardBegins(size_t block) = 0;
  virtual void BlockBackwardEnds(size_t block) = 0;

 protected:
  ~BlockBackwardListener() = default;
};

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

inline at::Tensor MarkBlockInput(const at::Tensor& x, BlockBackwardListener* listener,
                                 size_t block) {
  if (!x.requires_grad()) return x;
  return detail::BlockBackwardHook<false>::apply(x, reinterpret_cast<int64_t>(listener),
                                                 static_cast<int64_t>(block));
}

inline at::Tensor MarkBlockOutput(const at::Tensor& out, BlockBackwardListener* listener,
                                  size_t block) {
  if (!out.requires_grad()) return out;
  return detail::BlockBackwardHook<true>::apply(out, reinterpret_cast<int64_t>(listener),
                                                static_cast<int64_t>(block));
}

}  // namespace memsweep::sharding
