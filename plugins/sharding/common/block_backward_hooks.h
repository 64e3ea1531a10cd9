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

#include <cstddef>

namespace memsweep::sharding {

class BlockBackwardListener {
 public:
  virtual void BlockBackwardBegins(size_t block) = 0;
  virtual void BlockBackwardEnds(size_t block) = 0;

 protected:
  ~BlockBackwardListener() = default;
};

// Identity on the forward pass; in backward, tells `listener` that block `block`'s backward
// begins (MarkBlockOutput) or ends (MarkBlockInput). x (out) is returned as it is when it needs no
// gradient.
at::Tensor MarkBlockInput(const at::Tensor& x, BlockBackwardListener* listener, size_t block);
at::Tensor MarkBlockOutput(const at::Tensor& out, BlockBackwardListener* listener, size_t block);

}  // namespace memsweep::sharding
