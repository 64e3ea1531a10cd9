#include "core/plugin/plugin_registry.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/plugin/plugin_permissions.h"

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
    r->LoadDirectory(BuiltinPluginDirectory(), kBuiltinOrigin);
    if (const char* env = std::getenv("MEMSWEEP_PLUGIN_PATH")) {
      std::stringstream paths(env);
      std::string entry;
      while (std::getline(paths, entry, ':')) {
        if (!entry.empty()) r->LoadPath(entry, kEnvironmentOrigin);
      }
    }
    return r;
  }();
  return *registry;
}

std::vector<PluginFailure> PluginRegistry::LoadDirectory(const std::string& dir,
                                                         const std::string& origin) {
  std::error_code error;
  if (dir.empty() || !fs::is_directory(dir, error)) return {};
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".so") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<PluginFailure> failed;
  for (const auto& file : files) {
    for (PluginFailure& failure : LoadPath(file, origin)) failed.push_back(std::move(failure));
  }
  return failed;
}

std::vector<PluginFailure> PluginRegistry::LoadPath(const std::string& path,
                                                    const std::string& origin) {
  std::error_code error;
  if (fs::is_directory(path, error)) return LoadDirectory(path, origin);
  const std::string canonical = fs::weakly_canonical(path, error).string();
  if (const auto seen = loaded_paths_.find(canonical); seen != loaded_paths_.end()) {
    if (seen->second < 0) return {};
    return {failures_[static_cast<size_t>(seen->second)]};
  }
  std::string reason;
  if (!fs::exists(path, error)) {
    reason = path + ": no such file or directory";
  } else {
    try {
      reason = UnsafePluginPath(path);
      if (reason.empty()) reason = Add(PluginLibrary::Load(path));
    } catch (const PluginLoadError& e) {
      reason = e.what();
    }
  }
  if (reason.empty()) {
    loaded_paths_[canonical] = -1;
    return {};
  }
  loaded_paths_[canonical] = static_cast<long>(failures_.size());
  failures_.push_back({path, reason, origin});
  return {failures_.back()};
}

std::vector<PluginFailure> PluginRegistry::StartupFailures() const {
  std::vector<PluginFailure> startup;
  for (const PluginFailure& failure : failures_) {
    if (failure.origin == kBuiltinOrigin || failure.origin == kEnvironmentOrigin) {
      startup.push_back(failure);
    }
  }
  return startup;
}

std::string PluginRegistry::Add(std::shared_ptr<PluginLibrary> library) {
  const auto key = std::make_pair(library->slot(), library->name());
  auto existing = plugins_.find(key);
  if (existing != plugins_.end()) {
    return library->path() + ": duplicate plugin '" + library->name() + "' in slot '" +
           library->slot() + "': already loaded from " + existing->second->path();
  }
  if (library->slot_default()) {
    if (const PluginLibrary* other = DefaultFor(library->slot())) {
      return library->path() + ": plugin '" + library->name() +
             "' claims to be the default for slot '" + library->slot() + "', which is already '" +
             other->name() + "' (" + other->path() + ")";
    }
  }
  plugins_.emplace(key, std::move(library));
  return "";
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
