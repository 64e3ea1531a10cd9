#include "core/config/run_config_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/config/strategy_resolver.h"
#include "core/config/toml_overrides.h"
#include "core/config/toml_reader.h"
#include "core/data/byte_tokenizer.h"
#include "core/data/token_file.h"
#include "core/env/cuda_probe.h"
#include "core/memory/byte_size.h"

namespace memsweep::config {
namespace fs = std::filesystem;
namespace {

const std::vector<std::string> kSections = {"experiment", "model",   "data",      "optimizer",
                                            "device",     "plugins", "strategies"};
const std::vector<std::string> kModelKeys = {
    "preset",           "vocab_size",          "hidden_size",         "intermediate_size",
    "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "rope_theta",
    "rms_norm_eps",     "tie_word_embeddings", "max_position_embeddings"};

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

const toml::table& Section(const toml::table& root, const std::string& name) {
  static const toml::table kEmpty;
  const toml::node* node = root.get(name);
  return node != nullptr && node->is_table() ? *node->as_table() : kEmpty;
}

void ReadExperiment(const std::string& source, const toml::table& t, ExperimentSection& e) {
  TableReader r(source, "[experiment]", t, {"name", "steps", "warmup_steps", "seed", "repeats"});
  r.Read("name", e.name);
  r.Read("steps", e.steps);
  r.Read("warmup_steps", e.warmup_steps);
  r.Read("seed", e.seed);
  r.Read("repeats", e.repeats);
  if (e.repeats < 1) throw ConfigError(r.At("repeats") + " must be at least 1");
  if (e.steps < 1) throw ConfigError(r.At("steps") + " must be at least 1");
  if (e.warmup_steps < 0) throw ConfigError(r.At("warmup_steps") + " must not be negative");
}

void ReadModel(const std::string& source, const toml::table& t, ModelSection& m) {
  TableReader r(source, "[model]", t, kModelKeys);
  const auto presets = model::LlamaPresetNames();
  if (auto index = r.ReadChoice("preset", presets)) m.preset = presets[*index];
  m.llama = *model::LlamaPreset(m.preset);
  model::LlamaConfig& c = m.llama;
  r.Read("vocab_size", c.vocab_size);
  r.Read("hidden_size", c.hidden_size);
  r.Read("intermediate_size", c.intermediate_size);
  r.Read("num_hidden_layers", c.num_hidden_layers);
  r.Read("num_attention_heads", c.num_attention_heads);
  r.Read("num_key_value_heads", c.num_key_value_heads);
  r.Read("rope_theta", c.rope_theta);
  r.Read("rms_norm_eps", c.rms_norm_eps);
  r.Read("tie_word_embeddings", c.tie_word_embeddings);
  r.Read("max_position_embeddings", c.max_position_embeddings);
  if (auto problem = c.Problem()) {
    throw ConfigError(Where(source, t.source()) + "[model]: " + *problem);
  }
}

void ReadData(const std::string& source, const toml::table& t, data::DataConfig& d) {
  TableReader r(source, "[data]", t, {"path", "format", "text_field", "token_dtype"});
  r.Read("path", d.path);
  if (auto i = r.ReadChoice("format", {"jsonl", "text", "tokens"})) {
    d.format = static_cast<data::DataFormat>(*i);
  }
  r.Read("text_field", d.text_field);
  if (auto i = r.ReadChoice("token_dtype", {"uint16", "uint32"})) {
    d.token_dtype = static_cast<data::TokenDtype>(*i);
  }
  if (d.path.empty()) throw ConfigError(Where(source, t.source()) + "[data] path is required");
  // Relative paths are relative to the experiment file.
  fs::path path(d.path);
  if (path.is_relative() && !source.empty()) {
    path = fs::path(source).parent_path() / path;
  }
  d.path = path.lexically_normal().string();
  if (!fs::exists(d.path)) {
    throw ConfigError(r.At("path") + ": data file '" + d.path +
                      "' does not exist; give a path relative to the experiment file");
  }
}

void ReadOptimizer(const std::string& source, const toml::table& t, OptimizerSection& o) {
  TableReader r(source, "[optimizer]", t,
                {"lr", "min_lr_ratio", "lr_warmup_steps", "beta1", "beta2", "eps",
                 "weight_decay", "grad_clip"});
  r.Read("lr", o.lr);
  r.Read("min_lr_ratio", o.min_lr_ratio);
  r.Read("lr_warmup_steps", o.lr_warmup_steps);
  r.Read("beta1", o.beta1);
  r.Read("beta2", o.beta2);
  r.Read("eps", o.eps);
  r.Read("weight_decay", o.weight_decay);
  r.Read("grad_clip", o.grad_clip);
  if (o.lr <= 0) throw ConfigError(r.At("lr") + " must be positive");
  for (const char* key : {"beta1", "beta2"}) {
    const double beta = std::string(key) == "beta1" ? o.beta1 : o.beta2;
    if (beta < 0 || beta >= 1) throw ConfigError(r.At(key) + " must be in [0, 1)");
  }
  if (o.lr_warmup_steps < 0) throw ConfigError(r.At("lr_warmup_steps") + " must not be negative");
}

void ReadDevice(const std::string& source, const toml::table& t, DeviceSection& d) {
  TableReader r(source, "[device]", t, {"type", "index", "threads", "memory_budget", "gemm",
                                                "world_size", "collective_timeout"});
  if (auto i = r.ReadChoice("type", {"cpu", "cuda", "auto"})) {
    // cuda needs a CUDA build, a driver and a device; auto takes cuda when all three hold.
    const env::CudaProbe& cuda = env::ProbeCuda();
    if (*i == 1 && !cuda.usable()) {
      throw ConfigError(r.At("type") + " = \"cuda\": " + cuda.reason +
                        ". Use type = \"cpu\" (with memory_budget to simulate a GPU's size), or "
                        "\"auto\" to take a GPU only where there is one");
    }
    if (*i != 0 && cuda.usable()) {
      throw ConfigError(r.At("type") + ": this machine has " +
                        std::to_string(cuda.device_count) + " CUDA device(s), but this memsweep "
                        "version trains on the CPU device only (CUDA cells are not implemented "
                        "yet). Use type = \"cpu\" with memory_budget to simulate the GPU");
    }
  }
  if (r.Has("index")) {
    int64_t index = 0;
    r.Read("index", index);
    if (index < 0) throw ConfigError(r.At("index") + " must be 0 or more (a CUDA device number)");
    throw ConfigError(r.At("index") + " selects a CUDA device; this run uses the CPU device. "
                      "Delete the line");
  }
  r.Read("threads", d.threads);
  if (d.threads < 0) throw ConfigError(r.At("threads") + " must be 0 (all cores) or more");
  r.Read("world_size", d.world_size);
  if (d.world_size < 1 || d.world_size > 64) {
    throw ConfigError(r.At("world_size") + " must be between 1 and 64 (ranks on this machine)");
  }
  r.Read("collective_timeout", d.collective_timeout_seconds);
  if (d.collective_timeout_seconds <= 0) {
    throw ConfigError(r.At("collective_timeout") + " must be a positive number of seconds");
  }
  if (r.Has("memory_budget")) {
    const toml::node& node = *t.get("memory_budget");
    std::optional<int64_t> bytes;
    if (node.is_integer()) bytes = node.as_integer()->get();
    if (node.is_string()) bytes = memory::ParseBytes(node.as_string()->get());
    if (!bytes || *bytes <= 0) {
      throw ConfigError(r.At("memory_budget") +
                        " must be a size such as \"2GiB\", \"512MiB\" or a byte count");
    }
    d.memory_budget_bytes = bytes;
  }
  if (r.Has("gemm")) {
    // memsweep used to forward Debian LibTorch's BLAS calls to oneDNN; LibTorch 2.11 runs its
    // GEMMs on the MKL and oneDNN built into it, and there is nothing left to choose.
    throw ConfigError(r.At("gemm") + " is no longer a setting: LibTorch " + "2.11 runs fp32 "
                      "matrix products on its own MKL/oneDNN. Delete the line.");
  }
}

}  // namespace

toml::table ParseToml(std::string_view text, const std::string& source) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw ConfigError(Where(source, e.source()) + "TOML syntax error: " +
                      std::string(e.description()));
  }
}

RunConfig ParseRunConfig(std::string_view text, const std::string& source,
                         const std::vector<std::string>& overrides) {
  toml::table root = ParseToml(text, source);
  for (const auto& assignment : overrides) ApplyOverride(root, assignment);
  return RunConfigFromTable(root, source);
}

RunConfig RunConfigFromTable(const toml::table& root, const std::string& source) {
  for (auto&& [key, node] : root) {
    const std::string name(key.str());
    if (name == "matrix") {
      throw ConfigError(Where(source, key.source()) + "[matrix] describes several runs and " +
                        "this reads one: list them with `memsweep plan " + source +
                        "` and run one with `memsweep run " + source + " --cell INDEX`");
    }
    if (std::find(kSections.begin(), kSections.end(), name) == kSections.end()) {
      throw ConfigError(Where(source, key.source()) + "unknown section [" + name +
                        "]; allowed sections: " + Join(kSections));
    }
    if (!node.is_table()) {
      throw ConfigError(Where(source, key.source()) + "'" + name + "' must be a table [" + name +
                        "]");
    }
  }
  RunConfig cfg;
  cfg.source = source;
  ReadExperiment(source, Section(root, "experiment"), cfg.experiment);
  ReadModel(source, Section(root, "model"), cfg.model);
  ReadData(source, Section(root, "data"), cfg.data);
  ReadOptimizer(source, Section(root, "optimizer"), cfg.optimizer);
  ReadDevice(source, Section(root, "device"), cfg.device);
  ReadPluginPaths(source, Section(root, "plugins"), cfg.plugin_paths);
  ResolveStrategies(root, source, cfg);
  ValidateRunConfig(cfg);
  return cfg;
}

RunConfig LoadRunConfig(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open the experiment file; check the path");
  std::stringstream text;
  text << in.rdbuf();
  return ParseRunConfig(text.str(), path, overrides);
}

void ValidateRunConfig(const RunConfig& cfg) {
  const std::string at = cfg.source.empty() ? std::string("config: ") : cfg.source + ": ";
  const model::LlamaConfig& m = cfg.model.llama;
  if (auto problem = m.Problem()) throw ConfigError(at + "[model]: " + *problem);
  // Every strategy is created once: plugins check their own parameter ranges (and whether they
  // can run on this build) in their constructors.
  try {
    InstantiateStrategies(cfg);
  } catch (const std::exception& e) {
    throw ConfigError(at + "[strategies] " + e.what());
  }
  const data::DataConfig batches = EffectiveDataConfig(cfg);
  if (batches.seq_len > m.max_position_embeddings) {
    throw ConfigError(at + "[strategies.batching] seq_len = " + std::to_string(batches.seq_len) +
                      " exceeds [model] max_position_embeddings = " +
                      std::to_string(m.max_position_embeddings) +
                      ": lower seq_len or raise max_position_embeddings");
  }
  if (cfg.data.format != data::DataFormat::kTokens && m.vocab_size < data::kByteVocabSize) {
    throw ConfigError(at + "[model] vocab_size = " + std::to_string(m.vocab_size) +
                      " is smaller than the byte tokenizer's " +
                      std::to_string(data::kByteVocabSize) + " ids: raise vocab_size");
  }
  if (cfg.data.format == data::DataFormat::kTokens) {
    int32_t max_id = 0;
    try {
      for (int32_t id : data::LoadTokenFile(cfg.data.path, cfg.data.token_dtype)) {
        max_id = std::max(max_id, id);
      }
    } catch (const std::exception& e) {
      throw ConfigError(e.what());
    }
    if (max_id >= m.vocab_size) {
      throw ConfigError(at + "[data] token file '" + cfg.data.path + "' holds token id " +
                        std::to_string(max_id) + " but [model] vocab_size = " +
                        std::to_string(m.vocab_size) + ": raise vocab_size above it");
    }
  }
  const int64_t param_bytes = m.ParameterCount() * static_cast<int64_t>(sizeof(float));
  if (cfg.device.memory_budget_bytes && *cfg.device.memory_budget_bytes < param_bytes) {
    throw ConfigError(at + "[device] memory_budget = " +
                      memory::FormatBytes(*cfg.device.memory_budget_bytes) +
                      " is smaller than the model's fp32 parameters alone (" +
                      memory::FormatBytes(param_bytes) +
                      "): raise the budget or choose a smaller model");
  }
}

}  // namespace memsweep::config
