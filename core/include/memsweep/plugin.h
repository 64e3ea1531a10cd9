// Writing a memsweep plugin: implement the slot's interface (strategy.h), declare the parameter
// schema, and let MEMSWEEP_PLUGIN export the entry point.
//
//   class EveryN final : public memsweep::CallbackStrategy {
//    public:
//     explicit EveryN(const memsweep::PluginParams& p) : every_(p.Int("every")) {}
//     void OnStageEnd(memsweep::Stage stage, memsweep::RunContext& ctx) override { ... }
//    private:
//     int64_t every_;
//   };
//
//   static const MemsweepParamSpec kParams[] = {
//       {"every", MEMSWEEP_PARAM_INT, "10", "run every N optimizer steps", 0}};
//   MEMSWEEP_PLUGIN(EveryN, "every-n", "callbacks", "1.0.0", "Does X every N steps", kParams,
//                   /*slot_default=*/0)
//
// Build it with memsweep_add_plugin() from the installed SDK (docs/plugin-guide.md).
#pragma once

#include <cstddef>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>

#include "memsweep/build_fingerprint.h"
#include "memsweep/plugin_abi.h"
#include "memsweep/plugin_params.h"
#include "memsweep/strategy.h"

namespace memsweep {

using StrategyFactory = std::function<std::unique_ptr<Strategy>(const PluginParams&)>;

constexpr uint32_t CountParams(std::nullptr_t) { return 0; }
template <size_t N>
constexpr uint32_t CountParams(const MemsweepParamSpec (&)[N]) {
  return static_cast<uint32_t>(N);
}

// What a plugin's register function talks to (behind the C type MemsweepRegistrar).
class PluginRegistrar {
 public:
  virtual ~PluginRegistrar();
  virtual void SetFactory(StrategyFactory factory) = 0;
};

}  // namespace memsweep

#define MEMSWEEP_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

#define MEMSWEEP_PLUGIN(CLASS, NAME, SLOT, VERSION, DESCRIPTION, PARAMS, SLOT_DEFAULT)          \
  namespace {                                                                                  \
  int MemsweepRegister(MemsweepRegistrar* registrar, char* error, size_t error_size) {         \
    try {                                                                                      \
      reinterpret_cast<::memsweep::PluginRegistrar*>(registrar)->SetFactory(                   \
          [](const ::memsweep::PluginParams& params) -> std::unique_ptr<::memsweep::Strategy> { \
            return std::make_unique<CLASS>(params);                                            \
          });                                                                                  \
      return 0;                                                                                \
    } catch (const std::exception& e) {                                                        \
      std::snprintf(error, error_size, "%s", e.what());                                        \
    } catch (...) {                                                                            \
      std::snprintf(error, error_size, "unknown exception");                                   \
    }                                                                                          \
    return 1;                                                                                  \
  }                                                                                            \
  const MemsweepPluginInfo kMemsweepPluginInfo = {                                             \
      MEMSWEEP_PLUGIN_ABI_VERSION,                                                             \
      sizeof(MemsweepPluginInfo),                                                              \
      NAME,                                                                                    \
      SLOT,                                                                                    \
      VERSION,                                                                                 \
      DESCRIPTION,                                                                             \
      MEMSWEEP_BUILD_FINGERPRINT,                                                              \
      PARAMS,                                                                                  \
      ::memsweep::CountParams(PARAMS),                                                         \
      &MemsweepRegister,                                                                       \
      SLOT_DEFAULT};                                                                           \
  }                                                                                            \
  MEMSWEEP_PLUGIN_EXPORT const MemsweepPluginInfo* memsweep_plugin_info(void) {                \
    return &kMemsweepPluginInfo;                                                               \
  }

// For plugins without parameters: MEMSWEEP_PLUGIN(..., MEMSWEEP_NO_PARAMS, ...).
#define MEMSWEEP_NO_PARAMS nullptr
