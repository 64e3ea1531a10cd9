// What adapter/lora and adapter/qlora share: the LoRA parameters, the plan from the model's
// shapes, freezing the model group by group and adding the factors to the targeted modules of
// each block. The two differ in how the frozen base is stored and applied (`BaseStore`).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "lora_targets.h"
#include "memsweep/plugin.h"

namespace memsweep::plugins::adapter {

// The LoRA parameters both plugins declare, in this order.
#define MEMSWEEP_LORA_PARAM_SPECS                                                              \
  {"rank", MEMSWEEP_PARAM_INT, "8", "r: the factors' inner width", 0},                          \
  {"alpha", MEMSWEEP_PARAM_FLOAT, "16", "lora_alpha: the update is scaled by alpha / rank", 0},   \
  {"dropout", MEMSWEEP_PARAM_FLOAT, "0.0", "lora_dropout on the factors' input, in [0, 1)", 0},   \
  {"target_modules", MEMSWEEP_PARAM_STRINGS, "\"all-linear\"",                                   \
   "PEFT module names (q_proj k_proj v_proj o_proj gate_proj up_proj down_proj; phi3: "         \
   "qkv_proj gate_up_proj), or \"all-linear\" (every decoder linear layer)", 0},                \
  {"use_rslora", MEMSWEEP_PARAM_BOOL, "false", "scale by alpha / sqrt(rank) (rsLoRA)", 0},       \
  {"modules_to_save", MEMSWEEP_PARAM_STRINGS, "[]",                                             \
   "modules trained in full beside the factors: embed_tokens, lm_head", 0}

// How a frozen base is kept: `store` is called on each frozen parameter of a group (after
// requires_grad_(false)); `forward` gives the frozen part of an adapted layer's forward.
struct BaseStore {
  std::function<void(at::Tensor& frozen)> store;
  std::function<model::LinearFn(model::LinearLayer& layer)> forward;
};

// "fp32", "bf16", "fp16" as a dtype; std::invalid_argument naming `key` otherwise.
c10::ScalarType DtypeParam(const std::string& key, const std::string& name);

class LoraAdapter {
 public:
  explicit LoraAdapter(const PluginParams& params);
  AdapterPlan Plan(const model::ModelShape& shape) const;
  std::vector<AdapterTensor> AdaptGroup(const std::vector<size_t>& built, RunContext& ctx,
                                        const BaseStore& base);
  const LoraSettings& settings() const { return settings_; }

 private:
  double Scaling() const;
  bool Saved(const std::string& module) const;
  void Freeze(const std::vector<at::Tensor>& group, model::Model& model, const BaseStore& base) const;
  std::pair<at::Tensor, at::Tensor> Factors(const LoraModule& m, RunContext& ctx);

  LoraSettings settings_;
  double alpha_, dropout_;
  bool rslora_;
  std::vector<LoraModule> modules_;
  bool resolved_ = false;
  uint64_t draws_ = 0;
};

}  // namespace memsweep::plugins::adapter
