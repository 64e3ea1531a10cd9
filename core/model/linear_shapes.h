// The model's linear layers and counts from its configuration alone (model::ModelShape): what
// the adapter slot plans with before anything is built, and what the built model reports.
//
//   model::ModelShape shape = model::ShapeOf(cfg);  // Qwen2.5-7B: no parameter allocated
#pragma once

#include "core/model/llama_config.h"
#include "memsweep/model.h"

namespace memsweep::model {

// Per block q, k, v, o, gate, up, down (phi3: q, k, v rows of qkv_proj, gate and up of
// gate_up_proj), then lm_head.
ModelShape ShapeOf(const LlamaConfig& config);

}  // namespace memsweep::model
