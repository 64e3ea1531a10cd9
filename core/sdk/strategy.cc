// Out-of-line members of the SDK interfaces (strategy.h, plugin.h, plugin_params.h), so that
// their type information lives once, in libmemsweep.
#include "memsweep/strategy.h"

#include <stdexcept>

#include "memsweep/plugin.h"
#include "memsweep/plugin_params.h"

namespace memsweep {

Strategy::~Strategy() = default;
void Strategy::OnStageBegin(Stage, RunContext&) {}
void Strategy::OnStageEnd(Stage, RunContext&) {}
void Strategy::OnParametersBuilt(const std::vector<size_t>&, RunContext&) {}
bool Strategy::MathPreserving() const { return true; }
std::string Strategy::DeviceRefusal(c10::DeviceType) const { return ""; }
std::optional<std::vector<StageHook>> Strategy::StageHooks() const { return std::nullopt; }
const char* HookPointName(HookPoint point) {
  switch (point) {
    case HookPoint::kBegin: return "begin";
    case HookPoint::kEnd: return "end";
    case HookPoint::kParametersBuilt: return "parameters built";
  }
  return "?";
}
std::string AllocatorStrategy::DeviceAllocatorSettings() const { return ""; }
DeviceMemory::~DeviceMemory() = default;
Optimizer::~Optimizer() = default;
std::vector<at::Tensor> PrecisionStrategy::OptimizerParameters(
    const std::vector<at::Tensor>& model_parameters) {
  return model_parameters;
}
bool AreTheParameters(const std::vector<at::Tensor>& tensors,
                      const std::vector<at::Tensor>& parameters) {
  if (tensors.size() != parameters.size()) return false;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].is_same(parameters[i])) return false;
  }
  return true;
}

std::vector<at::Tensor> PrecisionStrategy::HandOverOptimizerParameters(
    const std::vector<at::Tensor>& model_parameters) {
  std::vector<at::Tensor> updated = OptimizerParameters(model_parameters);
  if (!AreTheParameters(updated, model_parameters)) {
    throw std::logic_error(
        "this precision strategy updates other tensors than the parameters (master copies) but "
        "does not implement HandOverOptimizerParameters, which a sharding strategy that owns the "
        "optimizer step needs");
  }
  return updated;
}
bool PrecisionStrategy::SkipsSteps() const { return false; }
bool ShardingStrategy::OwnsOptimizerStep() const { return false; }
void ShardingStrategy::AdoptOptimizerParameters(RunContext& context,
                                                std::vector<at::Tensor> updated) {
  if (context.model == nullptr || !AreTheParameters(updated, context.model->Parameters())) {
    throw std::logic_error(
        "this sharding strategy owns the optimizer step but does not take the precision "
        "strategy's master copies (AdoptOptimizerParameters); use a precision that updates the "
        "parameters themselves (\"fp32\", \"bf16-autocast\")");
  }
}
bool ShardingStrategy::AdoptsOptimizerParametersByGroup() const { return false; }
void ShardingStrategy::AdoptGroupOptimizerParameters(RunContext&, const std::vector<size_t>&,
                                                     std::vector<at::Tensor>) {
  throw std::logic_error(
      "this sharding strategy does not adopt the optimizer's tensors by group "
      "(AdoptsOptimizerParametersByGroup is false)");
}
double ShardingStrategy::OptimizerStep(RunContext&, const OptimizerStepSpec&) {
  throw std::logic_error("this sharding strategy does not own the optimizer step");
}
void ShardingStrategy::AddModelState(ModelStateTensors&) const {}
bool ShardingStrategy::SupportsFrozenParameters() const { return false; }
model::BlockRunner ShardingStrategy::WrapBlockRunner(model::BlockRunner inner) { return inner; }
Communicator::~Communicator() = default;
HostPool::~HostPool() = default;
PluginRegistrar::~PluginRegistrar() = default;

const std::vector<std::string>& SlotNames() {
  static const std::vector<std::string> kNames = {
#define MEMSWEEP_SLOT_NAME(id, name) name,
      MEMSWEEP_SLOTS(MEMSWEEP_SLOT_NAME)
#undef MEMSWEEP_SLOT_NAME
  };
  return kNames;
}

const char* SlotName(Slot slot) { return SlotNames()[static_cast<size_t>(slot)].c_str(); }

bool ParseSlot(const std::string& name, Slot& slot) {
  const auto& names = SlotNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) {
      slot = static_cast<Slot>(i);
      return true;
    }
  }
  return false;
}

const PluginParams::Value& PluginParams::Get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::out_of_range("plugin parameter '" + name + "' not set");
  return it->second;
}

int64_t PluginParams::Int(const std::string& name) const { return std::get<int64_t>(Get(name)); }

double PluginParams::Float(const std::string& name) const {
  const Value& v = Get(name);
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}

bool PluginParams::Bool(const std::string& name) const { return std::get<bool>(Get(name)); }

const std::string& PluginParams::String(const std::string& name) const {
  return std::get<std::string>(Get(name));
}

const std::vector<std::string>& PluginParams::Strings(const std::string& name) const {
  return std::get<std::vector<std::string>>(Get(name));
}

}  // namespace memsweep
