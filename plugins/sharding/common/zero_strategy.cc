#include "zero_strategy.h"

#include <stdexcept>
#include <string>

namespace memsweep::sharding {

bool OffloadChoice(const PluginParams& params, const char* name) {
  const std::string& value = params.String(name);
  if (value != "none" && value != "cpu") {
    throw std::invalid_argument(std::string(name) + " must be \"none\" or \"cpu\"");
  }
  return value == "cpu";
}

}  // namespace memsweep::sharding
