// The LM head and the cross-entropy fused, as Liger Kernel's fused linear cross-entropy does it:
// chunk by chunk of tokens, the forward computes the logits, the loss and at once the gradients
// with respect to the hidden states and the head's tensors, then drops the chunk's logits. No
// logits survive the forward; backward hands out the stored gradients, scaled by the incoming
// gradient (a loss scale, an accumulation factor).
//
// A second order cuts the head along the vocabulary instead (FusedOrder::kVocab): a first pass
// over the vocabulary blocks finds each token's log-sum-exp and target logit, a second one
// recomputes each block's logits for all tokens and writes that block's rows of the head's
// gradient at once — one product over every token, summed in the GEMM's own fp32 accumulator —
// while the hidden states' gradient (a [N, hidden] matrix) is the sum over the blocks. It costs
// a fourth product (the logits twice) but no head-sized sum: with 16-bit operands and an fp32
// sum of the head's gradient, the token order's [V, hidden] fp32 buffer, read and written at
// every chunk, is gone.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

#include "memsweep/loss.h"

namespace memsweep::plugins::loss {

// Which way the head is cut into pieces (see above).
enum class FusedOrder {
  kAuto,    // kVocab where it saves the head-sized fp32 sum (PickOrder), else kTokens
  kTokens,  // chunks of tokens, every one against the whole head (Liger Kernel's)
  kVocab,   // blocks of the vocabulary, every one against all tokens
};

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
  FusedOrder order = FusedOrder::kAuto;
};

// FusedOrder::kAuto's choice: kVocab when the head's weight gradient is computed (a trainable
// head), summed in fp32 (fp32_accumulation) from operands of a narrower compute dtype, the logits
// are upcast and no adapter set the head's forward; kTokens otherwise (kVocab needs all four).
FusedOrder PickOrder(const FusedLossOptions& options, bool weight_gradient, bool adapted_head,
                     c10::ScalarType compute);

// The vocabulary rows per block in FusedOrder::kVocab: as many blocks as Liger's chunking has
// chunks of tokens (the same logits per piece), each a multiple of 8 rows.
int64_t VocabBlockRows(int64_t tokens, int64_t vocab, int64_t chunk_tokens);

// Liger's chunk size for `tokens` tokens (FusedLossOptions::chunk_tokens = 0).
int64_t LigerChunkTokens(int64_t tokens, int64_t vocab, int64_t hidden);

// The loss of `inputs` (memsweep/loss.h) computed as described above: an fp32 scalar whose
// backward reaches inputs.hidden, the head's weight and bias and its forward_tensors.
at::Tensor FusedLinearCrossEntropy(const model::LossInputs& inputs, const FusedLossOptions& options);

}  // namespace memsweep::plugins::loss
