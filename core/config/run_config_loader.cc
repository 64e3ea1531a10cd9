#include "core/config/run_config_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/config/strategy_resolver.h"
#include "core/plugin/plugin_library.h"
#include "core/plugin/plugin_registry.h"
#include "core/config/toml_overrides.h"
#include "core/config/toml_reader.h"
#include "core/data/byte_tokenizer.h"
#include "core/data/document_encoder.h"
#include "core/data/token_cache.h"
#include "core/data/token_file.h"
#include "core/env/cpu_gemm.h"
#include "core/env/onednn_matmul.h"
#include "core/env/cuda_probe.h"
#include "core/env/nccl_build.h"
#include "core/env/gpu_catalog.h"
#include "core/memory/byte_size.h"
#include "core/model/hf_config.h"
#include "core/model/hf_weights.h"
#include "core/model/linear_shapes.h"

namespace memsweep::config {
namespace fs = std::filesystem;
namespace {

const std::vector<std::string> kSections = {"experiment", "model",   "data",      "optimizer",
                                            "device",     "plugins", "strategies"};
const std::vector<std::string> kModelKeys = {
    "preset",           "config",              "vocab_size",          "hidden_size",
    "intermediate_size", "num_hidden_layers",  "num_attention_heads", "num_key_value_heads",
    "head_dim",         "rope_theta",          "rms_norm_eps",        "tie_word_embeddings",
    "max_position_embeddings", "weights"};

const toml::table& Section(const toml::table& root, const std::string& name) {
  static const toml::table kEmpty;
  const toml::node* node = root.get(name);
  return node != nullptr && node->is_table() ? *node->as_table() : kEmpty;
}

// A path from the experiment file, relative to that file unless absolute, normalised.
std::string FromExperimentFile(const std::string& source, const std::string& value) {
  fs::path path(value);
  if (path.is_relative() && !source.empty()) path = fs::path(source).parent_path() / path;
  return path.lexically_normal().string();
}

void ReadExperiment(const std::string& source, const toml::table& t, ExperimentSection& e) {
  TableReader r(source, "[experiment]", t,
                {"name", "steps", "warmup_steps", "seed", "repeats", "memory_history"});
  r.Read("name", e.name);
  r.Read("steps", e.steps);
  r.Read("warmup_steps", e.warmup_steps);
  r.Read("seed", e.seed);
  r.Read("repeats", e.repeats);
  if (e.repeats < 1) throw ConfigError(r.At("repeats") + " must be at least 1");
  if (e.steps < 1) throw ConfigError(r.At("steps") + " must be at least 1");
  if (e.warmup_steps < 0) throw ConfigError(r.At("warmup_steps") + " must not be negative");
  r.Read("memory_history", e.memory_history);
  if (e.memory_history < 0) {
    throw ConfigError(r.At("memory_history") +
                      " must not be negative (0 = no allocation history; N = keep the latest N "
                      "allocator events)");
  }
}

void ReadModel(const std::string& source, const toml::table& t, ModelSection& m) {
  TableReader r(source, "[model]", t, kModelKeys);
  const auto presets = model::LlamaPresetNames();
  if (auto index = r.ReadChoice("preset", presets)) m.preset = presets[*index];
  m.llama = *model::LlamaPreset(m.preset);
  // A Hugging Face config.json (or its model directory) instead of a preset; relative to the
  // experiment file. The keys below still override it (e.g. fewer layers for the CPU).
  r.Read("config", m.config);
  if (!m.config.empty()) {
    if (t.contains("preset")) {
      throw ConfigError(r.At("config") + ": give either preset or config, not both");
    }
    m.config = FromExperimentFile(source, m.config);
    try {
      m.llama = model::ReadHuggingFaceConfig(m.config);
    } catch (const model::ModelConfigError& e) {
      throw ConfigError(r.At("config") + ": " + e.what());
    }
    m.preset.clear();
  }
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
  r.Read("head_dim", c.head_dim);
  if (auto problem = c.Problem()) {
    throw ConfigError(Where(source, t.source()) + "[model]: " + *problem);
  }
  // Weights (safetensors: a file, its index or the model directory), checked now against the
  // shape: every tensor present, nothing extra, the right shapes. Loaded in the model stage.
  r.Read("weights", m.weights);
  if (!m.weights.empty()) {
    m.weights = FromExperimentFile(source, m.weights);
    try {
      model::CheckWeights(model::OpenSafetensors(m.weights), c);
    } catch (const model::SafetensorsError& e) {
      throw ConfigError(r.At("weights") + ": " + e.what());
    }
  }
}

// Returns the number of ids the [data] tokenizer produces (0: none given), read once here.
int64_t ReadData(const std::string& source, const toml::table& t, data::DataConfig& d) {
  TableReader r(source, "[data]", t,
                {"path", "format", "text_field", "token_dtype", "train_on", "tokenizer"});
  r.Read("path", d.path);
  if (auto i = r.ReadChoice("format", {"jsonl", "text", "tokens"})) {
    d.format = static_cast<data::DataFormat>(*i);
  }
  r.Read("text_field", d.text_field);
  if (auto i = r.ReadChoice("token_dtype", {"uint16", "uint32"})) {
    d.token_dtype = static_cast<data::TokenDtype>(*i);
  }
  if (auto i = r.ReadChoice("train_on", {"all", "completion"})) {
    d.train_on = static_cast<data::TrainOn>(*i);
    if (d.train_on == data::TrainOn::kCompletion && d.format != data::DataFormat::kJsonl) {
      throw ConfigError(r.At("train_on") + ": \"completion\" needs JSONL prompt/completion "
                        "lines: set format = \"jsonl\", or train_on = \"all\"");
    }
  }
  int64_t tokenizer_ids = 0;
  r.Read("tokenizer", d.tokenizer);
  if (!d.tokenizer.empty()) {
    if (d.format == data::DataFormat::kTokens) {
      throw ConfigError(r.At("tokenizer") + ": format \"tokens\" holds ids already; a tokenizer "
                        "applies to \"jsonl\" and \"text\"");
    }
    d.tokenizer = FromExperimentFile(source, d.tokenizer);
    try {
      const std::string key = data::TokenizerCacheKey(d);
      if (const std::optional<int64_t> cached = data::ReadVocabCache(key)) {
        tokenizer_ids = *cached;
      } else {
        tokenizer_ids = data::DocumentEncoder(d).VocabSize();
        data::WriteVocabCache(key, tokenizer_ids);
      }
    } catch (const data::TokenizerError& e) {
      throw ConfigError(r.At("tokenizer") + ": " + e.what());
    }
  }
  if (d.path.empty()) throw ConfigError(Where(source, t.source()) + "[data] path is required");
  d.path = FromExperimentFile(source, d.path);
  if (!fs::exists(d.path)) {
    throw ConfigError(r.At("path") + ": data file '" + d.path +
                      "' does not exist; give a path relative to the experiment file");
  }
  return tokenizer_ids;
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

// A size given as "2GiB", "512MiB" or a byte count; nullopt when the node is neither.
std::optional<int64_t> SizeOf(const toml::node& node, bool allow_zero = false) {
  std::optional<int64_t> bytes;
  if (node.is_integer()) bytes = node.as_integer()->get();
  if (node.is_string()) bytes = memory::ParseBytes(node.as_string()->get());
  if (bytes && (*bytes < 0 || (*bytes == 0 && !allow_zero))) return std::nullopt;
  return bytes;
}

// [device] emulate = "a10g" | "20GiB", emulate_context = "600MiB".
EmulatedGpu ReadEmulate(const TableReader& r, const toml::table& t) {
  const toml::node& node = *t.get("emulate");
  EmulatedGpu gpu;
  const std::string text = node.is_string() ? node.as_string()->get() : "";
  if (const env::GpuModel* model = env::FindGpu(text)) {
    gpu.name = model->name;
    gpu.total_bytes = model->total_bytes;
    gpu.context_bytes = model->context_bytes;
  } else if (auto bytes = SizeOf(node)) {
    gpu.name = "custom";
    gpu.total_bytes = *bytes;  // a custom capacity is usable memory unless emulate_context says
  } else {
    std::string names;
    for (const std::string& name : env::GpuNames()) names += (names.empty() ? "" : ", ") + name;
    throw ConfigError(r.At("emulate") + " must name a GPU (" + names +
                      ") or give a capacity such as \"20GiB\" (docs/gpu-models.md)");
  }
  if (r.Has("emulate_context")) {
    const toml::node& context = *t.get("emulate_context");
    std::optional<int64_t> bytes = SizeOf(context, /*allow_zero=*/true);
    if (!bytes) {
      throw ConfigError(r.At("emulate_context") +
                        " must be a size such as \"600MiB\" (0 for none)");
    }
    gpu.context_bytes = *bytes;
  }
  if (gpu.UsableBytes() <= 0) {
    throw ConfigError(r.At("emulate_context") + " leaves nothing of " +
                      memory::FormatBytes(gpu.total_bytes) + " to the allocator: lower it");
  }
  return gpu;
}

void ReadDevice(const std::string& source, const toml::table& t, DeviceSection& d,
                ReadFor purpose) {
  TableReader r(source, "[device]", t,
                {"type", "index", "threads", "memory_budget", "emulate", "emulate_context", "gemm",
                 "fp32_gemm", "world_size", "collective_timeout"});
  const env::CudaProbe& cuda = env::ProbeCuda();
  // A plan of a CUDA cell on a machine without a usable GPU: the cell is read as CUDA's, and the
  // checks against this machine's GPUs (their count, their size) are the run's.
  bool gpu_here = cuda.usable();
  if (auto i = r.ReadChoice("type", {"cpu", "cuda", "auto"})) {
    // cuda needs a CUDA build, a driver and a device; auto takes cuda when all three hold.
    if (*i == 1 && !cuda.usable()) {
      if (purpose != ReadFor::kPlan) {
        throw ConfigError(r.At("type") + " = \"cuda\": " + cuda.reason +
                          ". Use type = \"cpu\" (with emulate or memory_budget to simulate a "
                          "GPU's size), or \"auto\" to take a GPU only where there is one");
      }
      d.gpu_needed = cuda.reason;
    }
    d.type = (*i == 1 || (*i == 2 && cuda.usable())) ? "cuda" : "cpu";
    d.auto_selected = *i == 2;
  }
  gpu_here = gpu_here || d.type != "cuda";
  r.Read("world_size", d.world_size);
  if (d.world_size < 1 || d.world_size > 64) {
    throw ConfigError(r.At("world_size") + " must be between 1 and 64 (ranks on this machine)");
  }
  if (r.Has("index")) {
    int64_t index = 0;
    r.Read("index", index);
    if (index < 0) throw ConfigError(r.At("index") + " must be 0 or more (a CUDA device number)");
    if (d.type != "cuda") {
      throw ConfigError(r.At("index") + " selects a CUDA device; this run uses the CPU device. "
                        "Delete the line, or set type = \"cuda\" on a machine with a GPU");
    }
    if (gpu_here && index >= cuda.device_count) {
      throw ConfigError(r.At("index") + " = " + std::to_string(index) + " but this machine has " +
                        std::to_string(cuda.device_count) + " CUDA device(s), numbered from 0");
    }
    if (d.world_size > 1) {
      throw ConfigError(r.At("index") + ": with world_size > 1 each rank uses cuda:LOCAL_RANK; "
                        "delete the line (choose GPUs with CUDA_VISIBLE_DEVICES)");
    }
    d.index = static_cast<int>(index);
  }
  if (d.type == "cuda" && d.world_size > 1 && !env::NcclBuiltIn()) {
    throw ConfigError(r.At("world_size") + ": ranks on CUDA devices talk through NCCL, and this "
                      "memsweep was built without it (nccl.h not found beside LibTorch). Rebuild "
                      "with the nvidia-nccl package beside torch, or use type = \"cpu\"");
  }
  if (d.type == "cuda" && gpu_here && d.world_size > cuda.device_count) {
    throw ConfigError(r.At("world_size") + " = " + std::to_string(d.world_size) + " ranks but " +
                      "this machine has " + std::to_string(cuda.device_count) + " CUDA device(s); "
                      "NCCL needs a GPU per rank. Lower world_size, or use type = \"cpu\"");
  }
  r.Read("threads", d.threads);
  if (d.threads < 0) throw ConfigError(r.At("threads") + " must be 0 (all cores) or more");
  r.Read("collective_timeout", d.collective_timeout_seconds);
  if (d.collective_timeout_seconds <= 0) {
    throw ConfigError(r.At("collective_timeout") + " must be a positive number of seconds");
  }
  if (r.Has("memory_budget")) {
    std::optional<int64_t> bytes = SizeOf(*t.get("memory_budget"));
    if (!bytes) {
      throw ConfigError(r.At("memory_budget") +
                        " must be a size such as \"2GiB\", \"512MiB\" or a byte count");
    }
    d.memory_budget_bytes = bytes;
  }
  if (r.Has("emulate_context") && !r.Has("emulate")) {
    throw ConfigError(r.At("emulate_context") + " applies to an emulated GPU: add emulate = "
                      "\"<gpu>\" or delete the line");
  }
  if (r.Has("emulate")) {
    if (d.memory_budget_bytes) {
      throw ConfigError(r.At("emulate") + " sets the budget to the emulated GPU's usable memory, "
                        "and memory_budget sets it too: keep one of the two");
    }
    d.emulate = ReadEmulate(r, t);
    d.memory_budget_bytes = d.emulate->UsableBytes();
    if (d.type == "cuda") {
      const int64_t real = static_cast<size_t>(d.index) < cuda.devices.size()
                               ? cuda.devices[d.index].total_bytes
                               : 0;
      // The cap must fit on this GPU: the emulated card's usable memory, within this card's.
      if (real > 0 && real < d.emulate->UsableBytes()) {
        throw ConfigError(r.At("emulate") + ": cuda:" + std::to_string(d.index) + " (" +
                          cuda.devices[d.index].name + ") has " + memory::FormatBytes(real) +
                          ", less than the " + memory::FormatBytes(d.emulate->UsableBytes()) +
                          " the emulated GPU leaves to the allocator; run it on a larger GPU, or "
                          "on type = \"cpu\"");
      }
    }
  }
  if (auto i = r.ReadChoice("gemm", {"auto", "native", "upcast"})) {
    d.gemm = static_cast<env::Bf16GemmSetting>(*i);
  }
  if (auto i = r.ReadChoice("fp32_gemm", {"auto", "native", "onednn"})) {
    d.fp32_gemm = static_cast<env::Fp32GemmSetting>(*i);
    if (d.fp32_gemm == env::Fp32GemmSetting::kOnednn && !env::OnednnFp32Usable()) {
      throw ConfigError(r.At("fp32_gemm") +
                        " = \"onednn\": oneDNN's fp32 matmul is not available here: it "
                        "needs a CPU with AVX-512 (avx512bw, avx512vl, avx512dq) or "
                        "AVX-NE-CONVERT, with ONEDNN_MAX_CPU_ISA not set below them; use "
                        "\"native\" (LibTorch's MKL) or \"auto\"");
    }
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
                         const std::vector<std::string>& overrides, ReadFor purpose) {
  toml::table root = ParseToml(text, source);
  for (const auto& assignment : overrides) ApplyOverride(root, assignment);
  return RunConfigFromTable(root, source, purpose);
}

RunConfig RunConfigFromTable(const toml::table& root, const std::string& source, ReadFor purpose) {
  return ValidatedRunFromTable(root, source, purpose).config;
}

RunConfig ReadRunConfig(const toml::table& root, const std::string& source, ReadFor purpose) {
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
  cfg.tokenizer_ids = ReadData(source, Section(root, "data"), cfg.data);
  ReadOptimizer(source, Section(root, "optimizer"), cfg.optimizer);
  ReadDevice(source, Section(root, "device"), cfg.device, purpose);
  ReadPluginPaths(source, Section(root, "plugins"), cfg.plugin_paths);
  ResolveStrategies(root, source, cfg);
  return cfg;
}

ValidatedRun ValidatedRunFromTable(const toml::table& root, const std::string& source,
                                   ReadFor purpose) {
  return ValidateRun(ReadRunConfig(root, source, purpose), purpose);
}

RunConfig LoadRunConfig(const std::string& path, const std::vector<std::string>& overrides) {
  return ParseRunConfig(ReadExperimentFile(path), path, overrides);
}

namespace {

// Where a slot's plugin was configured, for errors: "x.toml:12:1: [strategies.adapter]".
std::string OriginOf(const RunConfig& cfg, const std::string& slot, const std::string& at) {
  for (const StrategyChoice& choice : cfg.strategies) {
    if (choice.slot == slot && !choice.origin.empty()) return choice.origin;
  }
  return at + "[strategies." + slot + "]";
}

// The adapter's plan from the model's shapes (no parameter built): its own refusals (a target
// module the model lacks, a rank above a layer's width) with its table, and a sharding
// strategy that cannot leave a frozen base alone.
AdapterPlan CheckAdapter(const RunConfig& cfg, const plugin::StrategySet& strategies,
                         const std::string& at) {
  const plugin::ActiveStrategy* adapter = nullptr;
  const plugin::ActiveStrategy* sharding = nullptr;
  for (const plugin::ActiveStrategy& s : strategies) {
    if (dynamic_cast<const AdapterStrategy*>(s.impl.get()) != nullptr) adapter = &s;
    if (dynamic_cast<const ShardingStrategy*>(s.impl.get()) != nullptr) sharding = &s;
  }
  AdapterPlan plan;
  plan.trainable_params = cfg.model.llama.ParameterCount();
  if (adapter == nullptr) return plan;
  try {
    plan = dynamic_cast<const AdapterStrategy&>(*adapter->impl).Plan(model::ShapeOf(cfg.model.llama));
  } catch (const std::exception& e) {
    throw ConfigError(OriginOf(cfg, "adapter", at) + " (plugin '" + adapter->name + "'): " +
                      e.what());
  }
  if (plan.freezes_base && sharding != nullptr &&
      !dynamic_cast<const ShardingStrategy&>(*sharding->impl).SupportsFrozenParameters()) {
    throw ConfigError(OriginOf(cfg, "sharding", at) + " plugin = \"" + sharding->name +
                      "\" cannot leave a frozen base alone, and [strategies.adapter] plugin = \"" +
                      adapter->name + "\" freezes the model's parameters: use sharding \"zero2\" "
                      "(or \"zero1\", \"ddp\", \"none\") with an adapter");
  }
  return plan;
}

// "" when the device may hold the run; else why it cannot before a step: the model's fp32
// parameters alone exceed its budget (a frozen base may be stored narrower or quantised: the
// run measures it).
std::string ParametersAloneExceed(const RunConfig& cfg, const AdapterPlan& adapter) {
  const int64_t param_bytes =
      cfg.model.llama.ParameterCount() * static_cast<int64_t>(sizeof(float));
  if (!cfg.device.memory_budget_bytes || *cfg.device.memory_budget_bytes >= param_bytes ||
      adapter.freezes_base) {
    return "";
  }
  const std::string device =
      cfg.device.emulate && cfg.device.emulate->name != "custom"
          ? "the " + cfg.device.emulate->name + "'s usable " +
                memory::FormatBytes(*cfg.device.memory_budget_bytes)
          : memory::FormatBytes(*cfg.device.memory_budget_bytes) + " of device memory";
  return "out of memory before the first step: the model's fp32 parameters alone need " +
         memory::FormatBytes(param_bytes) + " of " + device +
         " (not trained; a larger device, or an adapter that freezes the base, may fit)";
}

}  // namespace

ValidatedRun ValidateRun(RunConfig cfg, ReadFor purpose) {
  const std::string at = cfg.source.empty() ? std::string("config: ") : cfg.source + ": ";
  const model::LlamaConfig& m = cfg.model.llama;
  if (auto problem = m.Problem()) throw ConfigError(at + "[model]: " + *problem);
  // Every strategy is created once: plugins check their own parameter ranges (and whether they
  // can run on this build) in their constructors; an error names the plugin's table.
  plugin::StrategySet strategies = InstantiateStrategies(cfg);
  // ... and says whether it can run on the run's device (never a silent fallback).
  // "meta": the shape-only device `memsweep estimate` runs a cell on (never read from a file).
  const c10::DeviceType device = cfg.device.type == "cuda"   ? c10::kCUDA
                                 : cfg.device.type == "meta" ? c10::kMeta
                                                             : c10::kCPU;
  // An estimate asks them itself, about the meta device and the device it stands for, and
  // reports a refusal as its cell's `unsupported` (core/estimate/cell_estimate.h).
  for (const plugin::ActiveStrategy& strategy : strategies) {
    if (purpose == ReadFor::kEstimate) break;
    std::string why;
    try {
      why = strategy.impl->DeviceRefusal(device);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) {
      throw ConfigError(at + "[strategies." + strategy.slot + "] plugin = \"" + strategy.name +
                        "\" cannot run on the " +
                        (device == c10::kCUDA   ? std::string("CUDA device ([device] type = \"cuda\")")
                         : device == c10::kMeta ? std::string("estimate's meta device (memsweep estimate)")
                                                : "CPU device ([device] type = \"" + cfg.device.type + "\")") +
                        ": " + why);
    }
  }
  // A precision strategy that skips steps reads .grad; a sharding strategy that owns the step
  // keeps its own reduced gradients, which neither the check nor a skip would reach.
  const plugin::ActiveStrategy* skipping = nullptr;
  const plugin::ActiveStrategy* owning = nullptr;
  for (const plugin::ActiveStrategy& s : strategies) {
    if (auto* p = dynamic_cast<const PrecisionStrategy*>(s.impl.get()); p && p->SkipsSteps()) {
      skipping = &s;
    }
    if (auto* h = dynamic_cast<const ShardingStrategy*>(s.impl.get()); h && h->OwnsOptimizerStep()) {
      owning = &s;
    }
  }
  if (skipping != nullptr && owning != nullptr) {
    throw ConfigError(at + "[strategies.precision] plugin = \"" + skipping->name +
                      "\" skips optimizer steps whose gradients overflow, and [strategies.sharding] "
                      "plugin = \"" + owning->name + "\" owns the optimizer step with reduced "
                      "gradients of its own, which that check never sees: use sharding \"none\" "
                      "or \"ddp\" with it, or a precision that does not skip steps");
  }
  // A sharding strategy that owns the step updates its partition with memsweep's AdamW, the
  // optimizer slot's default: another optimizer would be silently replaced.
  if (owning != nullptr) {
    const plugin::PluginLibrary* fallback = plugin::PluginRegistry::Default().DefaultFor("optimizer");
    for (const plugin::ActiveStrategy& s : strategies) {
      if (s.slot != "optimizer" || (fallback != nullptr && s.name == fallback->name())) continue;
      throw ConfigError(at + "[strategies.optimizer] plugin = \"" + s.name +
                        "\" cannot run beside [strategies.sharding] plugin = \"" + owning->name +
                        "\", which owns the optimizer step and keeps AdamW state of its own "
                        "partition (memsweep's AdamW, optimizer \"" +
                        (fallback != nullptr ? fallback->name() : std::string("adamw")) +
                        "\"): use that optimizer with it, or sharding \"none\" or \"ddp\" "
                        "with this one");
    }
  }
  const AdapterPlan adapter_plan = CheckAdapter(cfg, strategies, at);
  cfg.data = EffectiveDataConfig(cfg.data, strategies, cfg.source);
  const data::DataConfig& batches = cfg.data;
  if (batches.seq_len > m.max_position_embeddings) {
    throw ConfigError(at + "[strategies.batching] seq_len = " + std::to_string(batches.seq_len) +
                      " exceeds [model] max_position_embeddings = " +
                      std::to_string(m.max_position_embeddings) +
                      ": lower seq_len or raise max_position_embeddings");
  }
  if (m.sliding_window > 0 && batches.seq_len > m.sliding_window) {
    throw ConfigError(at + "[strategies.batching] seq_len = " + std::to_string(batches.seq_len) +
                      " is longer than the model's sliding_window = " +
                      std::to_string(m.sliding_window) +
                      " (its config.json): memsweep's attention plugins attend to every earlier "
                      "position, which equals the window only up to its length; use seq_len <= " +
                      std::to_string(m.sliding_window));
  }
  if (!cfg.data.tokenizer.empty()) {
    const int64_t needed = cfg.tokenizer_ids;
    if (m.vocab_size < needed) {
      throw ConfigError(at + "[model] vocab_size = " + std::to_string(m.vocab_size) +
                        " is smaller than the tokenizer's " + std::to_string(needed) +
                        " ids ([data] tokenizer = " + cfg.data.tokenizer +
                        "): raise vocab_size or use the model's own tokenizer");
    }
  } else if (cfg.data.format != data::DataFormat::kTokens && m.vocab_size < data::kByteVocabSize) {
    throw ConfigError(at + "[model] vocab_size = " + std::to_string(m.vocab_size) +
                      " is smaller than the byte tokenizer's " +
                      std::to_string(data::kByteVocabSize) + " ids: raise vocab_size");
  }
  if (cfg.data.format == data::DataFormat::kTokens) {
    // The ids the file needs (largest + 1), read once per file version on this machine.
    const std::string key = data::TokenFileCacheKey(cfg.data);
    std::optional<int64_t> needed = data::ReadVocabCache(key);
    if (!needed) {
      int32_t max_id = 0;
      try {
        for (int32_t id : data::LoadTokenFile(cfg.data.path, cfg.data.token_dtype)) {
          max_id = std::max(max_id, id);
        }
      } catch (const std::exception& e) {
        throw ConfigError(e.what());
      }
      needed = static_cast<int64_t>(max_id) + 1;
      data::WriteVocabCache(key, *needed);
    }
    if (*needed > m.vocab_size) {
      throw ConfigError(at + "[data] token file '" + cfg.data.path + "' holds token id " +
                        std::to_string(*needed - 1) + " but [model] vocab_size = " +
                        std::to_string(m.vocab_size) + ": raise vocab_size above it");
    }
  }
  // (A frozen base may be stored narrower or quantised: the run measures it.)
  std::string oom_before_run = ParametersAloneExceed(cfg, adapter_plan);
  return ValidatedRun{std::move(cfg), std::move(strategies), adapter_plan,
                      std::move(oom_before_run)};
}

}  // namespace memsweep::config
