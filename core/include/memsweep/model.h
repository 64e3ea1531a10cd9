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

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memsweep/attention.h"

namespace memsweep::model {

// One linear layer y = x·Wᵀ + b of the model, as its configuration gives it (no tensor).
struct LinearShape {
  // Hugging Face's name of the projection: q_proj k_proj v_proj o_proj gate_proj up_proj
  // down_proj in a block, lm_head outside.
  std::string name;
  int64_t block = -1;  // the decoder block, from 0; -1 outside the blocks (lm_head)
  int64_t in_features = 0, out_features = 0;
  bool has_bias = false;
  // The module a checkpoint of this architecture (and PEFT) has for the layer: `name` itself,
  // or the fused module it is rows of (phi3: q_proj, k_proj and v_proj are rows of qkv_proj,
  // gate_proj and up_proj of gate_up_proj), at rows [module_offset, module_offset +
  // out_features) of the module's module_out_features.
  std::string module;
  int64_t module_offset = 0, module_out_features = 0;
};

// The model's shape, from its configuration alone (plan time: nothing built).
struct ModelShape {
  std::string model_type;           // Hugging Face's: "llama", "qwen2", "mistral", "phi3"
  std::vector<LinearShape> linears; // every linear layer: the blocks' in order, lm_head last
  int64_t parameters = 0;           // every distinct parameter (a tied LM head once)
  int64_t vocab_size = 0, hidden_size = 0;
  bool tied_embeddings = false;     // the LM head is the embedding table
};

// How a linear layer is applied: (x, weight, bias) → y; bias may be undefined.
using LinearFn =
    std::function<at::Tensor(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias)>;

// One linear layer of the built model. `weight` and `bias` are the model's parameters (the same
// tensors as in Parameters()); the adapter slot may set `forward` (empty: at::linear).
struct LinearLayer {
  LinearShape shape;
  at::Tensor weight;  // [out_features, in_features]
  at::Tensor bias;    // [out_features], or undefined
  LinearFn forward;
  // The trainable tensors `forward` reads besides weight and bias (an adapter's factors), which
  // the adapter slot lists when it sets `forward`: a loss that differentiates the LM head itself
  // (loss/fused) asks autograd for their gradients too.
  std::vector<at::Tensor> forward_tensors;
};

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
  // Every linear layer, in ModelShape::linears' order (the pointers stay valid for the run).
  virtual std::vector<LinearLayer*> Linears() = 0;
  // The token embedding table [vocab, hidden] (the LM head's weight too when tied).
  virtual at::Tensor Embedding() const = 0;
  // The model's shape (as from its configuration).
  virtual const ModelShape& Shape() const = 0;
};

}  // namespace memsweep::model
