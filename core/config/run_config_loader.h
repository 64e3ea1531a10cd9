// Reading a RunConfig from a TOML file, with errors that say where and what to change.
//
//   RunConfig cfg =
//       LoadRunConfig("experiments/quickstart.toml", {"strategies.batching.seq_len=128"});
//
// Every error is a ConfigError whose message starts with "file:line:column:" (or "file:" when
// no position applies): malformed TOML, unknown sections or keys (the allowed ones are listed),
// wrong types, impossible values (hidden size not divisible by heads, a budget smaller than the
// parameters, a missing data file). Relative data paths are resolved against the directory of
// the experiment file.
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/config/config_error.h"
#include "core/config/run_config.h"
#include "core/plugin/active_strategy.h"

namespace memsweep::config {

// Parses and validates. `overrides` are "section.key=value" pairs (value in TOML syntax, bare
// strings allowed) applied on top of the file before validation.
RunConfig LoadRunConfig(const std::string& path, const std::vector<std::string>& overrides = {});

// What a document is read for. kEstimate: `memsweep estimate`'s reading — [device] as the CPU
// reads it (a CUDA cell needs no GPU on the machine that estimates it), and the plugins not asked
// about that device: the estimate asks each about the meta device and the device it stands for
// itself, and a refusal makes its cell `unsupported` (core/estimate/cell_estimate.h) — so a
// CUDA-only plugin (precision/fp16) is estimated for CUDA and refused for the CPU.
// kPlan: `memsweep plan`'s reading — a run's, except that a cell of [device] type = "cuda" needs
// no GPU on the machine that plans it: its DeviceSection::gpu_needed says why it could not run
// here, and the checks that count this machine's GPUs wait for the run.
enum class ReadFor { kRun, kEstimate, kPlan };

// The same from text; `source` names it in messages and anchors relative paths.
RunConfig ParseRunConfig(std::string_view text, const std::string& source,
                         const std::vector<std::string>& overrides = {},
                         ReadFor purpose = ReadFor::kRun);

// Parses TOML text, turning syntax errors into ConfigError("file:line:column: ...").
toml::table ParseToml(std::string_view text, const std::string& source);
// Reads and validates an already parsed document (e.g. one cell of an experiment matrix).
// `source` names the file in messages and anchors relative paths.
RunConfig RunConfigFromTable(const toml::table& root, const std::string& source,
                             ReadFor purpose = ReadFor::kRun);

// A run as validation leaves it: every strategy created once, by validation (plugins check
// their parameters in their constructors), and the trainer gets these very instances;
// config.data as the batching strategy configures it (micro-batch size, accumulation, length,
// padding).
struct ValidatedRun {
  RunConfig config;
  plugin::StrategySet strategies;
  // What trains, from the model's shapes (the adapter slot's plan; every parameter without).
  AdapterPlan adapter;
  // Why the run cannot fit its device before it starts ("" when it may): the model's fp32
  // parameters alone exceed the device budget. Not an input error: a matrix over cards asks
  // which of them fit, so such a cell is an `oom` with this reason (plan marks it, estimate and
  // run record it without training).
  std::string oom_before_run;
};
// Semantic checks that need no file positions; throws ConfigError naming `cfg.source`.
ValidatedRun ValidateRun(RunConfig cfg, ReadFor purpose = ReadFor::kRun);
// The document read as far as it goes without creating a plugin: every section and each
// slot's plugin and parameters (checked against its schema); ValidateRun does the rest. For a
// caller that validates the run itself (an estimate, which does so on the meta device).
RunConfig ReadRunConfig(const toml::table& root, const std::string& source,
                        ReadFor purpose = ReadFor::kRun);
// RunConfigFromTable's document, validated, with its strategies (what a worker trains).
ValidatedRun ValidatedRunFromTable(const toml::table& root, const std::string& source,
                                   ReadFor purpose = ReadFor::kRun);

}  // namespace memsweep::config
