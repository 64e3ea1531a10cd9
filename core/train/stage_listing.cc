#include "core/train/stage_listing.h"

#include <algorithm>
#include <sstream>

#include "core/train/strategy_hooks.h"

namespace memsweep::train {
namespace {

std::string Who(const ActiveStrategy& active) { return active.slot + "/" + active.name; }

// The declared words of each strategy's hook at (stage, point), in call order.
void AddHooks(const StrategyHooks& hooks, Stage stage, HookPoint point, const char* when,
              std::vector<StageEntry>& entries) {
  for (const ActiveStrategy* active : hooks.Runs(stage, point)) {
    const std::optional<std::vector<StageHook>> declared = DeclaredHooks(*active);
    std::string what = "(declares no hooks: called at every stage)";
    if (declared) {
      for (const StageHook& hook : *declared) {
        if (hook.stage == stage && hook.point == point) what = hook.what;
      }
    }
    entries.push_back({when, Who(*active), what});
  }
}

// The trainer's work at `stage`, with the slot capabilities it asks for (trainer.cc).
std::vector<StageEntry> HostWork(const StrategyHooks& hooks, Stage stage, c10::DeviceType device) {
  const auto who = [&](Slot slot) {
    return Who(*hooks.Get<Strategy>(slot).second);
  };
  const auto sharding = hooks.Get<ShardingStrategy>(Slot::kSharding);
  const auto precision = hooks.Get<PrecisionStrategy>(Slot::kPrecision);
  const bool owns_step = CallPlugin(*sharding.second, "plan (stages)",
                                    [&] { return sharding.first->OwnsOptimizerStep(); });
  const bool by_group = owns_step && CallPlugin(*sharding.second, "plan (stages)", [&] {
                          return sharding.first->AdoptsOptimizerParametersByGroup();
                        });
  switch (stage) {
    case Stage::kEnvironment:
      if (device == c10::kCUDA) {
        return {{"host", who(Slot::kAllocator),
                 "the CUDA caching allocator's settings (DeviceAllocatorSettings), applied "
                 "before CUDA starts"}};
      }
      return {{"host", who(Slot::kAllocator),
               "the memory backend behind the tracking allocator (MakeBackend)"}};
    case Stage::kModel: {
      std::vector<StageEntry> work{
          {"host", "", "builds the model group by group: embedding, each decoder block, final "
                       "norm and LM head; for each group:"},
          {"host", who(Slot::kAdapter), "freezes and adds its tensors (AdaptGroup)"}};
      AddHooks(hooks, Stage::kModel, HookPoint::kParametersBuilt, "built", work);
      if (by_group) {
        work.push_back({"host", who(Slot::kSharding),
                        "takes the group's trainable tensors from " + who(Slot::kPrecision) +
                            " (HandOverOptimizerParameters, AdoptGroupOptimizerParameters)"});
      }
      work.push_back({"host", who(Slot::kAttention), "the attention core (MakeAttention)"});
      work.push_back({"host", who(Slot::kKernels), "RMSNorm and SwiGLU (MakeKernels)"});
      work.push_back({"host", who(Slot::kCheckpointing),
                      "how each decoder block runs (MakeBlockRunner), wrapped by " +
                          who(Slot::kSharding) + " (WrapBlockRunner)"});
      work.push_back({"host", who(Slot::kLoss), "the LM head and the loss (MakeLoss)"});
      return work;
    }
    case Stage::kData:
      return {{"host", who(Slot::kBatching),
               "micro-batch size, accumulation, length and padding, as configured when the cell "
               "was validated (ConfigureBatches)"},
              {"host", who(Slot::kPacking), "the source of micro-batches (MakeBatchSource)"}};
    case Stage::kOptimizer:
      if (!owns_step) {
        return {{"host", who(Slot::kPrecision),
                 "names the tensors the update applies to (OptimizerParameters)"},
                {"host", who(Slot::kOptimizer),
                 "makes the update over them; its state comes at the first update "
                 "(MakeOptimizer)"}};
      }
      return {{"host", who(Slot::kSharding),
               by_group ? "owns the optimizer step; took " + who(Slot::kPrecision) +
                              "'s tensors group by group in the model stage"
                        : "owns the optimizer step; takes " + who(Slot::kPrecision) +
                              "'s tensors (HandOverOptimizerParameters, "
                              "AdoptOptimizerParameters)"}};
    case Stage::kStepBegin:
      return {{"host", "", "the learning rate; the step's micro-batches from the batch source "
                           "(this rank's share moved to the device)"}};
    case Stage::kForward:
      return {{"host", "", "the decoder blocks through " + who(Slot::kCheckpointing) +
                               "'s runner, with " + who(Slot::kAttention) + " and " +
                               who(Slot::kKernels) + "; then " + who(Slot::kLoss) +
                               "'s loss function"}};
    case Stage::kBackward:
      return {{"host", "", "backward from the loss (" + who(Slot::kCheckpointing) +
                               "'s runner recomputes what it dropped); the micro-batch is "
                               "released"}};
    case Stage::kOptimizerStep: {
      std::vector<StageEntry> work;
      const bool skips = CallPlugin(*precision.second, "plan (stages)",
                                    [&] { return precision.first->SkipsSteps(); });
      if (skips) {
        work.push_back({"host", who(Slot::kPrecision),
                        "may skip the update (skip_optimizer_step, set by its begin hook)"});
      }
      if (owns_step) {
        work.push_back({"host", who(Slot::kSharding),
                        "clips and updates its partition (OptimizerStep)"});
      } else {
        work.push_back({"host", "", "clips the gradients by their global norm"});
        work.push_back({"host", who(Slot::kOptimizer), "updates the tensors (Optimizer::Step)"});
      }
      return work;
    }
    case Stage::kStepEnd:
      return {{"host", "", "gradients released; the step's loss, time and peak recorded"}};
    case Stage::kRunEnd:
      return {};
  }
  return {};
}

const char* Repeats(Stage stage) {
  switch (stage) {
    case Stage::kForward:
    case Stage::kBackward:
      return "per micro-batch";
    case Stage::kStepBegin:
    case Stage::kOptimizerStep:
    case Stage::kStepEnd:
      return "per step";
    default:
      return "once";
  }
}

}  // namespace

std::vector<StageListing> ListStages(const plugin::StrategySet& strategies,
                                     c10::DeviceType device) {
  const StrategyHooks hooks(strategies);
  std::vector<StageListing> listing;
  for (int s = 0; s <= static_cast<int>(Stage::kRunEnd); ++s) {
    const Stage stage = static_cast<Stage>(s);
    StageListing one{stage, Repeats(stage), {}};
    AddHooks(hooks, stage, HookPoint::kBegin, "begin", one.entries);
    for (StageEntry& entry : HostWork(hooks, stage, device)) one.entries.push_back(std::move(entry));
    AddHooks(hooks, stage, HookPoint::kEnd, "end", one.entries);
    listing.push_back(std::move(one));
  }
  return listing;
}

std::string FormatStages(const std::vector<StageListing>& stages, size_t width) {
  size_t who_width = 0;
  for (const StageListing& s : stages) {
    for (const StageEntry& e : s.entries) who_width = std::max(who_width, e.who.size());
  }
  const size_t indent = 2 + 7 + who_width + 2;  // where `what` starts
  std::ostringstream out;
  for (const StageListing& s : stages) {
    out << StageName(s.stage) << " (" << s.repeats << ")\n";
    if (s.entries.empty()) out << "  -\n";
    for (const StageEntry& e : s.entries) {
      std::string line = "  " + e.when + std::string(7 - std::min<size_t>(e.when.size(), 6), ' ') +
                         e.who + std::string(who_width - e.who.size() + 2, ' ');
      // `what`, wrapped at spaces under its own column when the line would pass `width`.
      std::istringstream words(e.what);
      std::string word;
      size_t column = line.size();
      bool first = true;
      while (words >> word) {
        if (!first && width > 0 && column + 1 + word.size() > width) {
          line += "\n" + std::string(indent, ' ');
          column = indent;
        } else if (!first) {
          line += ' ';
          ++column;
        }
        line += word;
        column += word.size();
        first = false;
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << "\n";
    }
  }
  return out.str();
}

}  // namespace memsweep::train
