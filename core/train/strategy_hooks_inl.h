// Template definitions for strategy_hooks.h.
#pragma once

#include <c10/util/Exception.h>

namespace memsweep::train {

template <typename Fn>
auto CallPlugin(const ActiveStrategy& active, const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::OutOfMemoryError&) {
    throw;
  } catch (const PluginError&) {
    throw;
  } catch (const c10::Error& e) {
    throw PluginError("plugin '" + active.name + "' (" + active.slot + ") failed in " + what +
                      ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw PluginError("plugin '" + active.name + "' (" + active.slot + ") failed in " + what +
                      ": " + e.what());
  } catch (...) {
    throw PluginError("plugin '" + active.name + "' (" + active.slot + ") failed in " + what +
                      ": unknown exception");
  }
}

}  // namespace memsweep::train
