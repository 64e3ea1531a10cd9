// A Hugging Face checkpoint's tensors for a LlamaConfig: their names and shapes (known from the
// config alone), the check of a safetensors set against them, and the copy into a model's
// parameters. Names follow each model_type's Hugging Face modules ("model.layers.0.self_attn.
// q_proj.weight"); phi3's fused qkv_proj and gate_up_proj are split into memsweep's q, k, v and
// gate, up parameters (the same numbers, the same parameter count).
//
//   SafetensorsSet set = OpenSafetensors(dir);
//   CheckWeights(set, config);      // plan time: every tensor present, nothing extra, shapes
//   LoadWeights(*model, set);       // model stage: copies, converting F32/BF16/F16
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/model/llama.h"
#include "core/model/safetensors.h"

namespace memsweep::model {

// Where a Hugging Face tensor goes in memsweep's model: rows [row, row + rows) of it are the
// parameter named `parameter` (named_parameters()); rows = -1: the whole tensor.
struct ParameterSlice {
  std::string parameter;
  int64_t row = 0, rows = -1;
};

// Every Hugging Face tensor of the config, with the memsweep parameters it fills (phi3's fused
// qkv_proj: three slices). lm_head.weight is absent with tied embeddings.
std::map<std::string, std::vector<ParameterSlice>> HuggingFaceParameters(const LlamaConfig& config);

struct ExpectedTensor {
  std::string name;             // Hugging Face name
  std::vector<int64_t> shape;
};

std::vector<ExpectedTensor> HuggingFaceTensors(const LlamaConfig& config);

// Throws SafetensorsError naming the tensor, the file and the expected shape when a tensor is
// missing, extra (lm_head.weight is accepted, and ignored, beside tied embeddings) or shaped
// otherwise.
void CheckWeights(const SafetensorsSet& set, const LlamaConfig& config);

// Copies every tensor into `model`'s parameters (which keep their dtype and device). Call
// CheckWeights first. With `only` (a model built group by group): just the tensors that fill
// those parameters.
void LoadWeights(LlamaModelImpl& model, const SafetensorsSet& set,
                 const std::vector<at::Tensor>* only = nullptr);

}  // namespace memsweep::model
