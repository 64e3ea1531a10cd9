#include "core/plugin/plugin_library.h"

#include <dlfcn.h>
#include <toml++/toml.h>

#include <set>
#include <sstream>

#include "memsweep/build_fingerprint.h"

namespace memsweep::plugin {
namespace {

std::string Str(const char* s) { return s == nullptr ? std::string("(null)") : std::string(s); }

const char* TypeName(MemsweepParamType type) {
  switch (type) {
    case MEMSWEEP_PARAM_INT: return "int";
    case MEMSWEEP_PARAM_FLOAT: return "float";
    case MEMSWEEP_PARAM_BOOL: return "bool";
    case MEMSWEEP_PARAM_STRING: return "string";
    case MEMSWEEP_PARAM_BYTES: return "bytes";
    case MEMSWEEP_PARAM_STRINGS: return "strings";
  }
  return nullptr;
}

// A default literal must parse as TOML of the parameter's type.
bool DefaultFitsType(const std::string& literal, MemsweepParamType type) {
  toml::table parsed;
  try {
    parsed = toml::parse("v = " + literal);
  } catch (const toml::parse_error&) {
    return false;
  }
  const toml::node& v = *parsed.get("v");
  switch (type) {
    case MEMSWEEP_PARAM_INT: return v.is_integer();
    case MEMSWEEP_PARAM_FLOAT: return v.is_integer() || v.is_floating_point();
    case MEMSWEEP_PARAM_BOOL: return v.is_boolean();
    case MEMSWEEP_PARAM_STRING: return v.is_string();
    case MEMSWEEP_PARAM_BYTES: return v.is_integer() || v.is_string();
    case MEMSWEEP_PARAM_STRINGS:
      return v.is_string() ||
             (v.is_array() && v.as_array()->is_homogeneous(toml::node_type::string)) ||
             (v.is_array() && v.as_array()->empty());
  }
  return false;
}

std::vector<std::string> SchemaProblems(const MemsweepPluginInfo& info,
                                        std::vector<ParamSpec>& out) {
  std::vector<std::string> problems;
  if (info.num_params > 0 && info.params == nullptr) {
    problems.push_back("num_params is " + std::to_string(info.num_params) + " but params is null");
    return problems;
  }
  std::set<std::string> seen;
  for (uint32_t i = 0; i < info.num_params; ++i) {
    const MemsweepParamSpec& p = info.params[i];
    const std::string where = "parameter #" + std::to_string(i);
    if (p.name == nullptr || *p.name == '\0') {
      problems.push_back(where + " has no name");
      continue;
    }
    ParamSpec spec;
    spec.name = p.name;
    spec.type = p.type;
    const char* type_name = TypeName(p.type);
    if (type_name == nullptr) {
      problems.push_back("parameter '" + spec.name + "' has unknown type " +
                         std::to_string(static_cast<int>(p.type)));
      continue;
    }
    spec.type_name = type_name;
    if (!seen.insert(spec.name).second) {
      problems.push_back("parameter '" + spec.name + "' is declared twice");
    }
    spec.required = p.required != 0;
    spec.has_default = p.default_value != nullptr;
    if (spec.has_default) spec.default_literal = p.default_value;
    spec.doc = p.doc == nullptr ? "" : p.doc;
    if (spec.required && spec.has_default) {
      problems.push_back("parameter '" + spec.name + "' is required but has a default");
    }
    if (!spec.required && !spec.has_default) {
      problems.push_back("parameter '" + spec.name + "' is optional but has no default");
    }
    if (spec.has_default && !DefaultFitsType(spec.default_literal, p.type)) {
      problems.push_back("parameter '" + spec.name + "' default " + spec.default_literal +
                         " is not a TOML " + spec.type_name);
    }
    out.push_back(spec);
  }
  return problems;
}

}  // namespace

MemsweepBuildFingerprint HostFingerprint() { return MEMSWEEP_BUILD_FINGERPRINT; }

class PluginLibrary::Registrar final : public PluginRegistrar {
 public:
  void SetFactory(StrategyFactory factory) override { factory_ = std::move(factory); }
  StrategyFactory factory_;
};

namespace {

// Every way the plugin's info struct can disagree with this host, reported together: first the
// ABI version and struct size (nothing else can be trusted without them), then the build
// fingerprint, the slot, the name and the register function.
void CheckCompatible(const std::string& path, const MemsweepPluginInfo* info) {
  std::vector<std::string> mismatches;
  if (info->abi_version != MEMSWEEP_PLUGIN_ABI_VERSION) {
    mismatches.push_back("ABI version: expected " + std::to_string(MEMSWEEP_PLUGIN_ABI_VERSION) +
                         ", found " + std::to_string(info->abi_version));
  }
  if (info->struct_size < sizeof(MemsweepPluginInfo)) {
    mismatches.push_back("info struct size: expected at least " +
                         std::to_string(sizeof(MemsweepPluginInfo)) + ", found " +
                         std::to_string(info->struct_size));
  }
  if (!mismatches.empty()) {
    // Nothing else in the struct can be trusted.
    std::string message = path + ": incompatible plugin:";
    for (const auto& m : mismatches) message += "\n  " + m;
    throw PluginLoadError(message + "\n  rebuild it against this memsweep's SDK");
  }
  const MemsweepBuildFingerprint host = HostFingerprint();
  const MemsweepBuildFingerprint& found = info->fingerprint;
  if (Str(found.torch_version) != host.torch_version) {
    mismatches.push_back("LibTorch version: expected " + Str(host.torch_version) + ", found " +
                         Str(found.torch_version));
  }
  if (Str(found.compiler) != host.compiler) {
    mismatches.push_back("compiler: expected " + Str(host.compiler) + ", found " +
                         Str(found.compiler));
  }
  if (found.cxx11_abi != host.cxx11_abi) {
    mismatches.push_back("_GLIBCXX_USE_CXX11_ABI: expected " + std::to_string(host.cxx11_abi) +
                         ", found " + std::to_string(found.cxx11_abi));
  }
  if (Str(found.memsweep_version) != host.memsweep_version) {
    mismatches.push_back("memsweep SDK version: expected " + Str(host.memsweep_version) +
                         ", found " + Str(found.memsweep_version));
  }
  if (Str(found.sdk_hash) != host.sdk_hash) {
    mismatches.push_back("SDK headers (hash): expected " + Str(host.sdk_hash) + ", found " +
                         Str(found.sdk_hash) + " (built against other SDK headers)");
  }
  Slot slot;
  if (info->slot == nullptr || !ParseSlot(info->slot, slot)) {
    std::string allowed;
    for (const auto& s : SlotNames()) allowed += (allowed.empty() ? "" : ", ") + s;
    mismatches.push_back("slot: '" + Str(info->slot) + "' is not one of " + allowed);
  }
  if (info->name == nullptr || *info->name == '\0') mismatches.push_back("name: empty");
  if (info->register_fn == nullptr) mismatches.push_back("register function: null");
  if (!mismatches.empty()) {
    std::string message = path + ": incompatible plugin '" + Str(info->name) + "':";
    for (const auto& m : mismatches) message += "\n  " + m;
    throw PluginLoadError(message + "\n  rebuild it against this memsweep's SDK");
  }
}

}  // namespace

// Loads the library (RTLD_LOCAL, resolved now) and returns its info struct.
const MemsweepPluginInfo* PluginLibrary::OpenEntry(const std::string& path) {
  boost::dll::fs::error_code error;
  library_.load(path, boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now, error);
  if (error) {
    throw PluginLoadError(path + ": cannot load the library: " + error.message() + " (" +
                          Str(dlerror()) + ")");
  }
  if (!library_.has(MEMSWEEP_PLUGIN_ENTRY_SYMBOL)) {
    throw PluginLoadError(path + ": not a memsweep plugin: it does not export " +
                          std::string(MEMSWEEP_PLUGIN_ENTRY_SYMBOL) +
                          " (define it with MEMSWEEP_PLUGIN from <memsweep/plugin.h>)");
  }
  auto entry = library_.get<const MemsweepPluginInfo*()>(MEMSWEEP_PLUGIN_ENTRY_SYMBOL);
  const MemsweepPluginInfo* info = entry();
  if (info == nullptr) throw PluginLoadError(path + ": memsweep_plugin_info returned null");
  return info;
}

// Calls the plugin's register function, which hands over its strategy factory.
void PluginLibrary::TakeFactory(const MemsweepPluginInfo* info) {
  Registrar registrar;
  char error_text[1024] = {0};
  int status = 0;
  try {
    status = info->register_fn(
        reinterpret_cast<MemsweepRegistrar*>(static_cast<PluginRegistrar*>(&registrar)),
        error_text, sizeof error_text);
  } catch (const std::exception& e) {
    // The plugin broke the contract (an exception crossed the C boundary); report it anyway.
    throw PluginLoadError(path_ + ": plugin '" + name_ +
                          "' failed to register: its register function threw: " + e.what());
  } catch (...) {
    throw PluginLoadError(path_ + ": plugin '" + name_ +
                          "' failed to register: its register function threw an exception");
  }
  if (status != 0) {
    throw PluginLoadError(path_ + ": plugin '" + name_ + "' failed to register: " +
                          (error_text[0] ? error_text : "no message"));
  }
  if (!registrar.factory_) {
    throw PluginLoadError(path_ + ": plugin '" + name_ + "' registered no strategy factory");
  }
  factory_ = std::move(registrar.factory_);
}

std::shared_ptr<PluginLibrary> PluginLibrary::Load(const std::string& path) {
  std::shared_ptr<PluginLibrary> lib(new PluginLibrary());
  lib->path_ = path;
  const MemsweepPluginInfo* info = lib->OpenEntry(path);
  CheckCompatible(path, info);
  lib->name_ = info->name;
  lib->slot_ = info->slot;
  lib->version_ = Str(info->version);
  lib->description_ = info->description == nullptr ? "" : info->description;
  lib->slot_default_ = info->slot_default != 0;

  const std::vector<std::string> problems = SchemaProblems(*info, lib->params_);
  if (!problems.empty()) {
    std::string message = path + ": plugin '" + lib->name_ + "' has a bad parameter schema:";
    for (const auto& p : problems) message += "\n  " + p;
    throw PluginLoadError(message);
  }

  lib->TakeFactory(info);
  return lib;
}

std::shared_ptr<Strategy> PluginLibrary::Create(const PluginParams& params) const {
  std::unique_ptr<Strategy> made;
  try {
    made = factory_(params);
  } catch (const std::exception& e) {
    throw PluginLoadError("plugin '" + name_ + "' (" + slot_ + ") could not be created: " +
                          e.what());
  }
  if (!made) throw PluginLoadError("plugin '" + name_ + "' (" + slot_ + ") created nothing");
  // The strategy is destroyed by a deleter that keeps this library loaded until then.
  std::shared_ptr<const PluginLibrary> keep = shared_from_this();
  return std::shared_ptr<Strategy>(made.release(), [keep](Strategy* s) { delete s; });
}

}  // namespace memsweep::plugin
