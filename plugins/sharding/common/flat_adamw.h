// FlatAdamW: AdamW on one flat slice of parameters (a rank's partition) through the SDK's
// AdamWUpdate — the same arithmetic as the host's AdamW — so that a sharded run follows the same
// trajectory as the single-process one. The slice is updated in chunks of at most
// kFlatAdamWChunk elements, so the update's temporaries stay a few MiB however large the
// partition (element-wise, so chunking changes no value).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "memsweep/strategy.h"

namespace memsweep::sharding {

constexpr int64_t kFlatAdamWChunk = int64_t{1} << 20;

// p, exp_avg, exp_avg_sq: fp32, 1-D, same length, updated in place. grad: the same length, fp32
// or bf16 (widened a chunk at a time), multiplied by grad_scale (clipping) before the update, as
// the host clips its fp32 gradients in place before AdamW (an fp32 grad is left scaled).
void FlatAdamWStep(at::Tensor& p, at::Tensor& grad, at::Tensor& exp_avg, at::Tensor& exp_avg_sq,
                   const OptimizerStepSpec& spec, double grad_scale = 1.0);

}  // namespace memsweep::sharding
