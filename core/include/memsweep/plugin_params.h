// PluginParams: a plugin's validated parameters. The host checks the experiment's table against
// the plugin's schema (types, unknown keys, required keys) and fills in defaults before the
// plugin sees anything, so reads here cannot fail for keys the schema declares.
//
//   int64_t every = params.Int("every");
//   std::string mode = params.String("mode");
//   std::vector<std::string> targets = params.Strings("target_modules");
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace memsweep {

class PluginParams {
 public:
  using Value = std::variant<int64_t, double, bool, std::string, std::vector<std::string>>;

  void Set(const std::string& name, Value value) { values_[name] = std::move(value); }
  bool Has(const std::string& name) const { return values_.count(name) != 0; }

  int64_t Int(const std::string& name) const;
  double Float(const std::string& name) const;  // an int parameter reads as a float too
  bool Bool(const std::string& name) const;
  const std::string& String(const std::string& name) const;
  const std::vector<std::string>& Strings(const std::string& name) const;
  int64_t Bytes(const std::string& name) const { return Int(name); }  // sizes are stored in bytes

  const std::map<std::string, Value>& values() const { return values_; }

 private:
  const Value& Get(const std::string& name) const;
  std::map<std::string, Value> values_;
};

}  // namespace memsweep
