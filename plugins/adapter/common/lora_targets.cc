#include "lora_targets.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace memsweep::plugins::adapter {
namespace {

std::string Joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + ("\"" + n + "\"");
  return text;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::vector<std::string> LinearModuleNames(const model::ModelShape& shape) {
  std::vector<std::string> names;
  for (const model::LinearShape& l : shape.linears) {
    if (l.block < 0 || Contains(names, l.module)) continue;
    names.push_back(l.module);
  }
  return names;
}

std::vector<LoraModule> ResolveLoraModules(const model::ModelShape& shape,
                                           const LoraSettings& settings) {
  const std::vector<std::string> available = LinearModuleNames(shape);
  if (settings.targets.empty()) {
    throw std::invalid_argument("target_modules is empty: name the modules to adapt (this model "
                                "has " + Joined(available) + ") or write \"all-linear\"");
  }
  std::vector<std::string> targets;
  for (const std::string& t : settings.targets) {
    if (t == "all-linear") {
      if (settings.targets.size() != 1) {
        throw std::invalid_argument("target_modules: \"all-linear\" stands alone; write "
                                    "target_modules = \"all-linear\" or a list of module names");
      }
      targets = available;
      continue;
    }
    if (t == "lm_head") {
      throw std::invalid_argument("target_modules: \"lm_head\" is not adapted by LoRA here; to "
                                  "train the LM head in full write modules_to_save = [\"lm_head\"]");
    }
    if (!Contains(available, t)) {
      throw std::invalid_argument("target_modules: this model (" + shape.model_type +
                                  ") has no module \"" + t + "\"; its linear modules are " +
                                  Joined(available) + " (or write \"all-linear\")");
    }
    if (Contains(targets, t)) {
      throw std::invalid_argument("target_modules names \"" + t + "\" twice");
    }
    targets.push_back(t);
  }
  for (const std::string& m : settings.modules_to_save) {
    if (m != "embed_tokens" && m != "lm_head") {
      throw std::invalid_argument("modules_to_save: \"" + m + "\" is not a module this adapter "
                                  "can train in full; write \"embed_tokens\" or \"lm_head\"");
    }
  }
  if (settings.rank < 1) {
    throw std::invalid_argument("rank must be at least 1 (got " + std::to_string(settings.rank) +
                                "); 8 to 128 are usual");
  }
  // One module per (block, name), its layers in the model's order.
  std::vector<LoraModule> modules;
  std::map<std::pair<int64_t, std::string>, size_t> index;
  for (size_t i = 0; i < shape.linears.size(); ++i) {
    const model::LinearShape& l = shape.linears[i];
    if (l.block < 0 || !Contains(targets, l.module)) continue;
    const auto key = std::make_pair(l.block, l.module);
    auto found = index.find(key);
    if (found == index.end()) {
      found = index.emplace(key, modules.size()).first;
      modules.push_back({l.module, l.block, l.in_features, l.module_out_features, {}});
    }
    modules[found->second].layers.push_back(i);
  }
  for (const LoraModule& m : modules) {
    const int64_t width = std::min(m.in_features, m.out_features);
    if (settings.rank > width) {
      throw std::invalid_argument(
          "rank " + std::to_string(settings.rank) + " is above the width of " + m.module + " (" +
          std::to_string(m.out_features) + " x " + std::to_string(m.in_features) +
          "): a rank of at most " + std::to_string(width) + " adapts it");
    }
  }
  return modules;
}

int64_t LoraTrainableParameters(const model::ModelShape& shape, const LoraSettings& settings,
                                const std::vector<LoraModule>& modules) {
  int64_t n = 0;
  for (const LoraModule& m : modules) n += settings.rank * (m.in_features + m.out_features);
  const int64_t table = shape.vocab_size * shape.hidden_size;
  const bool embed = Contains(settings.modules_to_save, "embed_tokens");
  const bool head = Contains(settings.modules_to_save, "lm_head");
  if (embed) n += table;
  if (head && !(embed && shape.tied_embeddings)) n += table;
  return n;
}

}  // namespace memsweep::plugins::adapter
