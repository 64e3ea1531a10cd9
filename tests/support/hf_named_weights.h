// A model's parameters under their Hugging Face names (phi3's fused projections concatenated as
// Hugging Face keeps them), ready for WriteSafetensors: tests save a seeded model as a checkpoint
// and load it through `[model] weights`.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "core/model/hf_weights.h"
#include "core/model/llama.h"
#include "support/safetensors_writer.h"

namespace memsweep::testing_support {

inline NamedTensors HuggingFaceNamed(model::LlamaModelImpl& model) {
  const auto params = model.named_parameters();
  NamedTensors out;
  for (const auto& [name, slices] : model::HuggingFaceParameters(model.config())) {
    std::vector<at::Tensor> parts;
    for (const model::ParameterSlice& slice : slices) parts.push_back(params[slice.parameter]);
    out.emplace_back(name, parts.size() == 1 ? parts[0] : at::cat(parts));
  }
  return out;
}

}  // namespace memsweep::testing_support
