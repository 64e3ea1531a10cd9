// PluginRegistry: every plugin found, by slot and name, plus the ones that failed to load and why.
//
// Plugins are looked for only in: the built-in plugin directory (lib/memsweep/plugins beside
// libmemsweep.so), the directories in MEMSWEEP_PLUGIN_PATH (colon-separated), and paths an
// experiment file names in [plugins] paths. A failure in one library never stops the others.
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

struct PluginFailure {
  std::string path;
  std::string reason;
};

class PluginRegistry {
 public:
  // The process-wide registry, with the built-in directory and MEMSWEEP_PLUGIN_PATH loaded.
  static PluginRegistry& Default();

  // Loads every *.so directly inside `dir` (sorted by name). A missing directory is ignored.
  void LoadDirectory(const std::string& dir);
  // Loads one file, or every plugin in it if it is a directory. Already loaded paths are skipped.
  void LoadPath(const std::string& path);

  const PluginLibrary* Find(const std::string& slot, const std::string& name) const;
  // The slot's default plugin (declared by the plugin itself), or null.
  const PluginLibrary* DefaultFor(const std::string& slot) const;
  std::vector<const PluginLibrary*> InSlot(const std::string& slot) const;
  std::vector<const PluginLibrary*> All() const;
  const std::vector<PluginFailure>& Failures() const { return failures_; }

 private:
  void Add(std::shared_ptr<PluginLibrary> library);

  std::map<std::pair<std::string, std::string>, std::shared_ptr<PluginLibrary>> plugins_;
  std::map<std::string, std::string> loaded_paths_;  // canonical path -> plugin name
  std::vector<PluginFailure> failures_;
};

// lib/memsweep/plugins beside libmemsweep.so.
std::string BuiltinPluginDirectory();

}  // namespace memsweep::plugin
