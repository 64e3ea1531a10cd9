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
#include <c10/core/DeviceType.h>
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
  // Tokens per chunk; 0: DefaultChunkTokens (on CUDA Liger's choice, the next power of two of
  // ⌈N / ⌈V / H⌉⌉ for N tokens, vocabulary V and hidden size H; on the CPU chunks long enough
  // for the CPU's GEMM, within a quarter of the fp32 logits).
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

// Liger's chunk size for `tokens` tokens: the next power of two of ⌈N / ⌈V / H⌉⌉, which makes a
// chunk's logits about as large as the hidden states.
int64_t LigerChunkTokens(int64_t tokens, int64_t vocab, int64_t hidden);

// The bytes one token of a chunk holds beyond the gradients while its chunk is computed: its
// logits (and their fp32 copy where the compute dtype is narrower), its row of the hidden states'
// gradient product and a few per-token scalars. A chunk of n tokens holds n times this.
int64_t ChunkBytesPerToken(int64_t vocab, int64_t hidden, c10::ScalarType compute);

// Tokens per chunk from which the CPU's GEMMs against the head run at their full rate: each chunk
// reads the [V, H] head for its logits and the hidden states' gradient and reads and writes the
// fp32 [V, H] sum of the head's gradient — a rank-n update doing 2·n flops per 8 bytes moved —
// so chunks shorter than this leave a CPU's cores waiting on memory (docs/loss.md, "The default
// chunk").
inline constexpr int64_t kCpuGemmChunkTokens = 1024;

// The chunk FusedLossOptions::chunk_tokens = 0 takes, for `tokens` tokens against a [vocab,
// hidden] head computed in `compute` on `device` (the device the run stands for: an estimate's
// meta tensors stand for the CPU or CUDA — memsweep/compute_device.h — so the estimate chunks as
// the run does; shapes and types only, never a timing).
//   CUDA: LigerChunkTokens (Liger Kernel's rule, tuned for GPUs).
//   CPU:  the longest chunk within both max(LigerChunkTokens, kCpuGemmChunkTokens) and the bound
//         ChunkBytesPerToken · n ≤ tokens · vocab — a quarter of the fp32 logits (4 · tokens ·
//         vocab bytes) — then evened out: ⌈tokens / pieces⌉ for the pieces that chunk makes,
//         rounded up to a multiple of 16 where that stays within the bound.
//         Liger's rule gives the CPU chunks too short for its GEMM (4 tokens for Qwen2.5-0.5B's
//         head over 512 tokens: 128 passes over the 545 MB head, 0.12-0.18x loss/full's step).
int64_t DefaultChunkTokens(int64_t tokens, int64_t vocab, int64_t hidden, c10::DeviceType device,
                           c10::ScalarType compute);

// The loss of `inputs` (memsweep/loss.h) computed as described above: an fp32 scalar whose
// backward reaches inputs.hidden, the head's weight and bias and its forward_tensors.
at::Tensor FusedLinearCrossEntropy(const model::LossInputs& inputs, const FusedLossOptions& options);

}  // namespace memsweep::plugins::loss
