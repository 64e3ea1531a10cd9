// The language-model loss as the loss slot computes it: from the final hidden states, the LM
// head and the targets to the scalar the trainer differentiates.
//
//   model::LossFn loss = [](const model::LossInputs& in) {
//     at::Tensor logits = model::ApplyLinear(*in.head, in.hidden);     // [B, T, vocab]
//     return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}).to(at::kFloat),
//                                   in.targets.reshape({-1}), {}, at::Reduction::Sum,
//                                   data::kIgnoreIndex) / in.normalizer;
//   };
//
// That is what loss/full does (transformers' ForCausalLMLoss). A loss strategy may compute the
// same value another way — in chunks of tokens, or fused with the head's gradients — as long as
// autograd reaches the hidden states and every tensor of the head that trains.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

#include "memsweep/model.h"

namespace memsweep::model {

struct LossInputs {
  // [B, T, hidden]: the final norm's output, in the compute dtype; part of the autograd graph.
  at::Tensor hidden;
  // The LM head: weight [vocab, hidden] (the embedding table when tied), bias (undefined for
  // every bundled architecture) and the adapter slot's forward, if it set one.
  const LinearLayer* head = nullptr;
  // [B, T] int64: the token each position predicts, data::kIgnoreIndex where none is (padding,
  // a row's last position, masked labels).
  at::Tensor targets;
  // The loss is the sum of the per-token cross-entropies divided by this: the real target
  // tokens of the whole optimizer step, so micro-batches (and ranks) add up to the step's mean.
  double normalizer = 1.0;
};

// Computes the loss of one micro-batch: a scalar fp32 tensor whose backward reaches
// `hidden` and the head's trainable tensors.
using LossFn = std::function<at::Tensor(const LossInputs& inputs)>;

// y = x·Wᵀ + b through the layer's forward (the adapter slot's), or at::linear when it has none.
at::Tensor ApplyLinear(const LinearLayer& layer, const at::Tensor& x);

}  // namespace memsweep::model
