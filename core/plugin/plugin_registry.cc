#include "core/plugin/plugin_registry.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace memsweep::plugin {
namespace fs = std::filesystem;

std::string BuiltinPluginDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&BuiltinPluginDirectory), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  return (fs::path(info.dli_fname).parent_path() / "memsweep" / "plugins").string();
}

PluginRegistry& PluginRegistry::Default() {
  static PluginRegistry* registry = [] {
    auto* r = new PluginRegistry();  // never destroyed: plugins stay loaded for the process
    r->LoadDirectory(BuiltinPluginDirectory());
    if (const char* env = std::getenv("MEMSWEEP_PLUGIN_PATH")) {
      std::stringstream paths(env);
      std::string entry;
      while (std::getline(paths, entry, ':')) {
        if (!entry.empty()) r->LoadPath(entry);
      }
    }
    return r;
  }();
  return *registry;
}

void PluginRegistry::LoadDirectory(const std::string& dir) {
  std::error_code error;
  if (dir.empty() || !fs::is_directory(dir, error)) return;
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".so") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) LoadPath(file);
}

void PluginRegistry::LoadPath(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    LoadDirectory(path);
    return;
  }
  const std::string canonical = fs::weakly_canonical(path, error).string();
  if (loaded_paths_.count(canonical) != 0) return;
  loaded_paths_[canonical] = "";
  if (!fs::exists(path, error)) {
    failures_.push_back({path, "no such file"});
    return;
  }
  try {
    Add(PluginLibrary::Load(path));
  } catch (const PluginLoadError& e) {
    failures_.push_back({path, e.what()});
  }
}

void PluginRegistry::Add(std::shared_ptr<PluginLibrary> library) {
  const auto key = std::make_pair(library->slot(), library->name());
  auto existing = plugins_.find(key);
  if (existing != plugins_.end()) {
    failures_.push_back({library->path(), library->path() + ": duplicate plugin '" +
                                              library->name() + "' in slot '" + library->slot() +
                                              "': already loaded from " +
                                              existing->second->path()});
    return;
  }
  if (library->slot_default()) {
    if (const PluginLibrary* other = DefaultFor(library->slot())) {
      failures_.push_back({library->path(), library->path() + ": plugin '" + library->name() +
                                                "' claims to be the default for slot '" +
                                                library->slot() + "', which is already '" +
                                                other->name() + "' (" + other->path() + ")"});
      return;
    }
  }
  plugins_.emplace(key, std::move(library));
}

const PluginLibrary* PluginRegistry::Find(const std::string& slot, const std::string& name) const {
  auto it = plugins_.find({slot, name});
  return it == plugins_.end() ? nullptr : it->second.get();
}

const PluginLibrary* PluginRegistry::DefaultFor(const std::string& slot) const {
  for (const auto& [key, lib] : plugins_) {
    if (key.first == slot && lib->slot_default()) return lib.get();
  }
  return nullptr;
}

std::vector<const PluginLibrary*> PluginRegistry::InSlot(const std::string& slot) const {
  std::vector<const PluginLibrary*> out;
  for (const auto& [key, lib] : plugins_) {
    if (key.first == slot) out.push_back(lib.get());
  }
  return out;
}

std::vector<const PluginLibrary*> PluginRegistry::All() const {
  std::vector<const PluginLibrary*> out;
  for (const auto& slot : SlotNames()) {
    for (const auto* lib : InSlot(slot)) out.push_back(lib);
  }
  return out;
}

}  // namespace memsweep::plugin
