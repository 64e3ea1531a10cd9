// The LM head and the cross-entropy fused, as Liger Kernel's fused linear cross-entropy does it:
// chunk by chunk of tokens, the forward computes the logits, the loss and at once the gradients
// with respect to the hidden states and the head's tensors, then drops the chunk's logits. No
// logits survive the forward; backward hands out the stored gradients, scaled by the incoming
// gradient (a loss scale, an accumulation factor).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "memsweep/loss.h"

namespace memsweep::plugins::loss {

struct FusedLossOptions {
  // Tokens per chunk; 0: Liger's choice, the next power of two of ⌈N / ⌈V / H⌉⌉ for N tokens,
  // vocabulary V and hidden size H (a chunk's logits are then about as large as the hidden
  // states).
  int64_t chunk_tokens = 0;
  bool upcast = true;  // logits to fp32 before the softmax (logits_dtype = "fp32")
  // The head's weight and bias gradients are summed over the chunks in fp32 (true), or in the
  // weight's dtype as Liger Kernel does (false: no fp32 buffer of the head's size, but a bf16
  // sum drifts with the number of chunks).
  bool fp32_accumulation = true;
};

// Liger's chunk size for `tokens` tokens (FusedLossOptions::chunk_tokens = 0).
int64_t LigerChunkTokens(int64_t tokens, int64_t vocab, int64_t hidden);

// The loss of `inputs` (memsweep/loss.h) computed as described above: an fp32 scalar whose
// backward reaches inputs.hidden, the head's weight and bias and its forward_tensors.
at::Tensor FusedLinearCrossEntropy(const model::LossInputs& inputs, const FusedLossOptions& options);

}  // namespace memsweep::plugins::loss
