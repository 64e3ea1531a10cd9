// The strategies a run uses: one per slot (hook order) and any callbacks, each with the name
// and version of the plugin that made it, so that errors and results can name it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "memsweep/strategy.h"

namespace memsweep::plugin {

struct ActiveStrategy {
  std::string slot;
  std::string name;
  std::string version;
  std::shared_ptr<Strategy> impl;
};

using StrategySet = std::vector<ActiveStrategy>;

}  // namespace memsweep::plugin
