// RunConfig: one fully resolved training configuration, as read from an experiment file.
//
// Sections mirror the TOML file (docs/experiment-format.md): [experiment], [model], [data],
// [optimizer], [device], [plugins] and one [strategies.<slot>] table per slot. Every field has a
// default, so a file with only [data] path is a valid run. Loading and validation live in
// run_config_loader.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memsweep/data_config.h"
#include "core/env/cpu_gemm.h"
#include "core/model/llama_config.h"
#include "memsweep/plugin_params.h"

namespace memsweep::config {

struct ExperimentSection {
  std::string name = "run";
  int64_t steps = 20;
  int64_t warmup_steps = 2;  // steps left out of throughput and step-time figures
  uint64_t seed = 1234;
  int64_t repeats = 1;  // an experiment matrix runs every cell this many times, seeds seed+r
  // The most allocator events a run's allocation history keeps (its latest; PyTorch's
  // max_entries); 0 = no history. The worker stores it as a snapshot PyTorch's memory viewer
  // opens (docs/snapshot.md).
  int64_t memory_history = 0;
};

struct ModelSection {
  std::string preset = "tiny";  // the base shape; explicit LlamaConfig keys override it
  std::string config;           // a Hugging Face config.json instead of a preset ("" = none)
  std::string weights;          // safetensors to load instead of the seeded init ("" = none)
  model::LlamaConfig llama;
};

struct OptimizerSection {
  double lr = 1e-3;
  double min_lr_ratio = 0.1;
  int64_t lr_warmup_steps = 2;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // global L2 norm; 0 disables clipping
};

// A smaller GPU to behave like ([device] emulate): its memory as the driver reports it, less
// what the CUDA context and library workspaces take on such a card (docs/gpu-models.md).
struct EmulatedGpu {
  std::string name;  // a named GPU ("a10g") or "custom" for a capacity given as a size
  int64_t total_bytes = 0;
  int64_t context_bytes = 0;
  int64_t UsableBytes() const { return total_bytes - context_bytes; }
};

struct DeviceSection {
  // Resolved at load time: "cpu" or "cuda" ("auto" in the file becomes one of them).
  std::string type = "cpu";
  bool auto_selected = false;  // type came from "auto"
  // Read for `memsweep plan` (ReadFor::kPlan) on a machine where type = "cuda" cannot run: why
  // ("no CUDA device is visible"); "" where the cell can run here.
  std::string gpu_needed;
  int index = 0;    // cuda:index for a single process; ranks use cuda:LOCAL_RANK
  int threads = 0;  // 0 = every available core
  // How bf16 matrix products run on the CPU device (core/env/cpu_gemm.h).
  env::Bf16GemmSetting gemm = env::Bf16GemmSetting::kAuto;
  // How fp32 matrix products run on the CPU device (core/env/cpu_gemm.h).
  env::Fp32GemmSetting fp32_gemm = env::Fp32GemmSetting::kAuto;
  // The device budget: set by memory_budget, or by emulate (its usable bytes). On the CPU it
  // simulates a device of this size; on CUDA it caps the caching allocator.
  std::optional<int64_t> memory_budget_bytes;
  std::optional<EmulatedGpu> emulate;
  // Ranks of a data-parallel run (docs/distributed.md); each rank reads its share of every
  // global batch. memory_budget and threads apply to each rank.
  int world_size = 1;
  double collective_timeout_seconds = 300.0;  // a collective waiting longer fails the run
};

// The plugin chosen for a slot, with its validated parameters (defaults filled in).
struct StrategyChoice {
  std::string slot;
  std::string plugin;
  std::string version;  // of the plugin that validated the parameters
  PluginParams params;
  // Where it was configured, for errors: "x.toml:12:1: [strategies.checkpointing]" (the table's
  // position; "x.toml: [strategies.batching]" for a slot the file leaves out).
  std::string origin;
  // Where each parameter the table gives was set, for errors about it: "x.toml:13:10:
  // [strategies.checkpointing]" (the value's position: its key's line, or the [matrix] line
  // that supplied it).
  std::map<std::string, std::string> param_origins;
};

struct RunConfig {
  std::string source;  // the file it was read from ("" when built in code)
  ExperimentSection experiment;
  ModelSection model;
  data::DataConfig data;
  int64_t tokenizer_ids = 0;  // ids the [data] tokenizer produces (0: the byte tokenizer)
  OptimizerSection optimizer;
  DeviceSection device;
  std::vector<std::string> plugin_paths;  // [plugins] paths, resolved against the file
  // One per slot, in hook order (memsweep/strategy.h), then the callbacks in file order.
  std::vector<StrategyChoice> strategies;
};

}  // namespace memsweep::config
