// What runs at each stage of a cell's training, in order: the strategies' declared hooks (in
// the order StrategyHooks calls them — the same function decides) and the slot capabilities
// the trainer asks for there (core/train/trainer.cc, stage by stage). `memsweep plan --stages`
// prints it, for a user debugging a combination and for a reader of the trainer.
//
//   for (const StageListing& s : ListStages(run.strategies, c10::kCPU)) ...
//   std::cout << FormatStages(ListStages(run.strategies, c10::kCPU), 100);
#pragma once

#include <c10/core/DeviceType.h>

#include <cstddef>
#include <string>
#include <vector>

#include "core/plugin/active_strategy.h"
#include "memsweep/stage.h"

namespace memsweep::train {

struct StageEntry {
  std::string when;  // "begin", "host" (the trainer, asking a slot), "built" (per group), "end"
  std::string who;   // "precision/bf16"; "" for the trainer's own work
  std::string what;  // the hook's declared words, or what the trainer does
};

struct StageListing {
  Stage stage = Stage::kEnvironment;
  std::string repeats;  // "once", "per step", "per micro-batch"
  std::vector<StageEntry> entries;
};

// Every stage of a run of `strategies` on a device of type `device`, in the order the loop
// enters them. Asks the strategies where their hooks act and what the sharding and precision
// slots do at the optimizer stage (PluginError naming the plugin if one throws).
std::vector<StageListing> ListStages(const plugin::StrategySet& strategies, c10::DeviceType device);

// One block per stage: its name and how often it runs, then its entries, one per line, each
// entry's words wrapped under their column to `width` display columns (0: not wrapped).
std::string FormatStages(const std::vector<StageListing>& stages, size_t width = 0);

}  // namespace memsweep::train
