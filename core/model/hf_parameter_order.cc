#include "core/model/hf_parameter_order.h"

#include <algorithm>
#include <array>
#include <string>
#include <tuple>

namespace memsweep::model {
namespace {

// Where a decoder layer's tensor named `name` ("q_proj", "q_proj_bias", "q_proj_lora_A",
// "input_layernorm.weight") stands: (its module's position, its place within the module).
std::pair<int, int> InLayer(const std::string& name) {
  // Hugging Face's module order within a layer: self_attn (q, k, v or a fused qkv, o), mlp
  // (gate or a fused gate_up, up, down), input_layernorm, post_attention_layernorm.
  static const std::array<std::pair<const char*, int>, 11> kModules = {{{"qkv_proj", 0},
                                                                          {"q_proj", 0},
                                                                          {"k_proj", 1},
                                                                          {"v_proj", 2},
                                                                          {"o_proj", 3},
                                                                          {"gate_up_proj", 4},
                                                                          {"gate_proj", 4},
                                                                          {"up_proj", 5},
                                                                          {"down_proj", 6},
                                                                          {"input_layernorm", 7},
                                                                          {"post_attention_layernorm", 8}}};
  for (const auto& [module, position] : kModules) {
    const std::string prefix = module;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    if (!rest.empty() && rest[0] != '_' && rest[0] != '.') continue;  // "up_proj" vs "gate_up_proj"
    // Within the module: the weight, its bias, then an adapter's tensors (PEFT registers
    // lora_A before lora_B), then anything else.
    if (rest.empty() || rest == ".weight") return {position, 0};
    if (rest == "_bias") return {position, 1};
    if (rest == "_lora_A") return {position, 2};
    if (rest == "_lora_B") return {position, 3};
    return {position, 4};
  }
  return {9, 0};
}

}  // namespace

std::vector<size_t> HuggingFaceParameterOrder(const torch::nn::Module& model) {
  const auto named = model.named_parameters(/*recurse=*/true);
  // (group, layer, module, place, original index): group 0 embedding, 1 layers, 2 final norm,
  // 3 LM head, 4 anything else.
  std::vector<std::tuple<int, int, int, int, size_t>> keys;
  size_t index = 0;
  for (const auto& item : named) {
    const std::string& name = item.key();
    std::tuple<int, int, int, int, size_t> key{4, 0, 0, 0, index};
    if (name == "embed_tokens") {
      key = {0, 0, 0, 0, index};
    } else if (name.rfind("layer", 0) == 0 && name.find('.') != std::string::npos) {
      const size_t dot = name.find('.');
      const std::string number = name.substr(5, dot - 5);
      if (!number.empty() && std::all_of(number.begin(), number.end(), ::isdigit)) {
        const auto [module, place] = InLayer(name.substr(dot + 1));
        key = {1, std::stoi(number), module, place, index};
      }
    } else if (name.rfind("norm.", 0) == 0) {
      key = {2, 0, 0, 0, index};
    } else if (name == "lm_head") {
      key = {3, 0, 0, 0, index};
    }
    keys.push_back(key);
    ++index;
  }
  std::stable_sort(keys.begin(), keys.end());
  std::vector<size_t> order;
  for (const auto& key : keys) order.push_back(std::get<4>(key));
  return order;
}

}  // namespace memsweep::model
