// PluginRegistry: every plugin found, by slot and name, plus the ones that failed to load and why.
//
// Plugins are looked for only in: the built-in plugin directory (lib/memsweep/plugins beside
// libmemsweep.so), the directories in MEMSWEEP_PLUGIN_PATH (colon-separated), paths an
// experiment file names in [plugins] paths and `memsweep plugins --path`. A failure in one
// library never stops the others from loading; each failure records where the library was named,
// so that the caller can refuse it (the rule, docs/plugin-guide.md "Load errors": every library
// memsweep is pointed at must load; an experiment refuses to run while one has failed, and
// `memsweep plugins` exits 2 after listing it).
//
//   PluginRegistry& registry = PluginRegistry::Default();   // built-in dir + MEMSWEEP_PLUGIN_PATH
//   const PluginLibrary* eager = registry.Find("attention", "eager");
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/plugin/plugin_library.h"

namespace memsweep::plugin {

// Where a library was named, for the messages of its failures.
inline constexpr const char* kBuiltinOrigin = "the built-in plugin directory";
inline constexpr const char* kEnvironmentOrigin = "MEMSWEEP_PLUGIN_PATH";

struct PluginFailure {
  std::string path;
  std::string reason;  // "<path>: what is wrong ..." (the exact messages: docs/plugin-guide.md)
  std::string origin;  // where it was named: kBuiltinOrigin, kEnvironmentOrigin, "--path", ...
};

class PluginRegistry {
 public:
  // The process-wide registry, with the built-in directory and MEMSWEEP_PLUGIN_PATH loaded.
  static PluginRegistry& Default();

  // Loads every *.so directly inside `dir` (sorted by name). A missing directory is ignored.
  // Returns the failures of those libraries (as LoadPath).
  std::vector<PluginFailure> LoadDirectory(const std::string& dir, const std::string& origin = "");
  // Loads one file, or every plugin in it if it is a directory; `origin` says where the path was
  // named. Already loaded paths are not loaded again. Returns the failures of the libraries at
  // `path`, also those that failed on an earlier call (with that call's origin).
  std::vector<PluginFailure> LoadPath(const std::string& path, const std::string& origin = "");

  const PluginLibrary* Find(const std::string& slot, const std::string& name) const;
  // The slot's default plugin (declared by the plugin itself), or null.
  const PluginLibrary* DefaultFor(const std::string& slot) const;
  std::vector<const PluginLibrary*> InSlot(const std::string& slot) const;
  std::vector<const PluginLibrary*> All() const;
  // Every failure so far, in load order.
  const std::vector<PluginFailure>& Failures() const { return failures_; }
  // The failures of the libraries Default() loaded: the built-in directory and
  // MEMSWEEP_PLUGIN_PATH.
  std::vector<PluginFailure> StartupFailures() const;

 private:
  // The reason `library` cannot be added (a duplicate name, a second default), or "".
  std::string Add(std::shared_ptr<PluginLibrary> library);

  std::map<std::pair<std::string, std::string>, std::shared_ptr<PluginLibrary>> plugins_;
  // Canonical path of every library tried -> its index in failures_, or -1 when it loaded.
  std::map<std::string, long> loaded_paths_;
  std::vector<PluginFailure> failures_;
};

// lib/memsweep/plugins beside libmemsweep.so.
std::string BuiltinPluginDirectory();

}  // namespace memsweep::plugin
