// Which linear layers a LoRA adapts, resolved from the model's shapes alone (plan time: no
// parameter exists yet), and how many parameters it trains.
//
//   LoraSettings s{.rank = 16, .targets = {"q_proj", "v_proj"}};
//   std::vector<LoraModule> modules = ResolveLoraModules(shape, s);  // throws on bad input
//
// A target is a module name as Hugging Face PEFT writes it: q_proj k_proj v_proj o_proj
// gate_proj up_proj down_proj, or phi3's fused qkv_proj and gate_up_proj (one A and one B over
// the fused width, as PEFT builds them, although memsweep keeps the fused layers apart), or
// "all-linear": every linear module of the decoder blocks (never the LM head), as PEFT defines it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsweep/model.h"

namespace memsweep::plugins::adapter {

struct LoraSettings {
  int64_t rank = 8;
  std::vector<std::string> targets;          // module names, or {"all-linear"}
  std::vector<std::string> modules_to_save;  // "embed_tokens", "lm_head": trained in full
};

// One adapted module of one decoder block: A [rank, in_features], B [out_features, rank]; the
// model's layers it covers (one, or the parts of a fused module), as indices into
// ModelShape::linears.
struct LoraModule {
  std::string module;
  int64_t block = 0;
  int64_t in_features = 0, out_features = 0;
  std::vector<size_t> layers;
};

// The modules `settings` adapts, block by block in the model's order. Throws
// std::invalid_argument naming what to write instead: a target the architecture does not have
// (with the names it has), a rank below 1 or above a module's smaller dimension, an unknown
// module to save.
std::vector<LoraModule> ResolveLoraModules(const model::ModelShape& shape,
                                           const LoraSettings& settings);

// The module names the model's decoder blocks have, in the order of the first block.
std::vector<std::string> LinearModuleNames(const model::ModelShape& shape);

// Parameters the adapter trains: rank·(in + out) per module, plus each module to save in full
// (a tied embedding and LM head count once).
int64_t LoraTrainableParameters(const model::ModelShape& shape, const LoraSettings& settings,
                                const std::vector<LoraModule>& modules);

}  // namespace memsweep::plugins::adapter
