// PluginLibrary: one plugin shared library, loaded and checked.
//
// Loading (Boost.DLL, RTLD_LOCAL | RTLD_NOW) succeeds only when the library exports
// memsweep_plugin_info, its ABI version and struct size are the host's, its build fingerprint
// (LibTorch version, compiler, _GLIBCXX_USE_CXX11_ABI) equals the host's, its parameter schema
// is well formed and its register function succeeds. Every mismatch is reported in one message
// naming the file (docs/plugin-guide.md lists the messages). A loaded library is never unloaded
// while anything it created is alive: strategies hold a reference to it.
//
//   std::shared_ptr<PluginLibrary> lib = PluginLibrary::Load("plugins/libfoo.so");  // throws
//   std::unique_ptr<Strategy> s = lib->Create(params);
#pragma once

#include <boost/dll/shared_library.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "memsweep/plugin.h"
#include "memsweep/plugin_abi.h"

namespace memsweep::plugin {

class PluginLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A plugin's parameter as the host understands it.
struct ParamSpec {
  std::string name;
  MemsweepParamType type;
  std::string type_name;  // "int", "float", "bool", "string", "bytes"
  bool has_default = false;
  std::string default_literal;  // TOML literal, as declared
  std::string doc;
  bool required = false;
};

class PluginLibrary : public std::enable_shared_from_this<PluginLibrary> {
 public:
  static std::shared_ptr<PluginLibrary> Load(const std::string& path);

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  const std::string& slot() const { return slot_; }
  const std::string& version() const { return version_; }
  const std::string& description() const { return description_; }
  bool slot_default() const { return slot_default_; }
  const std::vector<ParamSpec>& params() const { return params_; }

  // Creates a strategy from validated parameters. The strategy keeps this library loaded.
  std::shared_ptr<Strategy> Create(const PluginParams& params) const;

 private:
  PluginLibrary() = default;
  class Registrar;
  const MemsweepPluginInfo* OpenEntry(const std::string& path);
  void TakeFactory(const MemsweepPluginInfo* info);

  boost::dll::shared_library library_;
  std::string path_, name_, slot_, version_, description_;
  bool slot_default_ = false;
  std::vector<ParamSpec> params_;
  StrategyFactory factory_;
};

// The host's fingerprint, as plugins must report it.
MemsweepBuildFingerprint HostFingerprint();

}  // namespace memsweep::plugin
