// The model as a strategy sees it: its parameters and its decoder blocks, and how each block is
// run (BlockRunner, the checkpointing slot's product, which the sharding slot may wrap).
//
//   for (model::Block* block : ctx.model->Blocks()) Index(block, block->Parameters());
//
//   model::BlockRunner runner = [](model::Block& block, const at::Tensor& x, const at::Tensor& cos,
//                                  const at::Tensor& sin, const model::AttentionInputs& inputs,
//                                  const model::AttentionFn& attention) {
//     return block.Forward(x, cos, sin, inputs, attention);  // what RunBlockDirectly does
//   };
//
// The host's model (a Llama-family decoder, docs/metrics.md) implements these interfaces; a
// plugin never sees its class.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

#include "memsweep/attention.h"

namespace memsweep::model {

// One decoder block: RMSNorm → attention → residual → RMSNorm → SwiGLU MLP → residual.
class Block {
 public:
  virtual ~Block();
  // x: [B, T, hidden]; cos, sin: [B, 1, T, head_dim] rotary tables. Records the autograd graph
  // when grad mode is on, like any LibTorch operation.
  virtual at::Tensor Forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                             const AttentionInputs& inputs, const AttentionFn& attention) = 0;
  // The block's parameters, always in the same order.
  virtual std::vector<at::Tensor> Parameters() const = 0;
  // A reference that keeps the block alive (for an autograd node that runs it again in
  // backward); empty when the block is not owned by a shared_ptr (its owner keeps it alive).
  virtual std::shared_ptr<Block> Share() = 0;
};

// Runs one decoder block; the checkpointing slot provides it (e.g. to recompute in backward).
using BlockRunner = std::function<at::Tensor(Block& block, const at::Tensor& x,
                                             const at::Tensor& cos, const at::Tensor& sin,
                                             const AttentionInputs& inputs,
                                             const AttentionFn& attention)>;

// block.Forward(x, cos, sin, inputs, attention): keeps every activation for backward.
at::Tensor RunBlockDirectly(Block& block, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin, const AttentionInputs& inputs,
                            const AttentionFn& attention);

class Model {
 public:
  virtual ~Model();
  // Every parameter, in the order the optimizer and the memory breakdown see them.
  virtual std::vector<at::Tensor> Parameters() const = 0;
  // The decoder blocks, first to last (the same objects a BlockRunner receives).
  virtual std::vector<Block*> Blocks() const = 0;
};

}  // namespace memsweep::model
