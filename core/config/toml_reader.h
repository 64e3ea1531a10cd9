// TableReader: typed, position-aware reads from one TOML table, for loaders that must reject
// unknown keys (listing the allowed ones) and wrong types with "file:line:column:" messages.
//
//   TableReader reader(source, "[data]", table, {"path", "seq_len"});
//   reader.Read("seq_len", cfg.seq_len);   // leaves the default when the key is absent
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::config {

// "file:line:column: " for a node (or "file: " without a position).
std::string Where(const std::string& source, const toml::source_region& region);
// The text of the experiment file at `path`; throws ConfigError naming it when it is missing, a
// directory or cannot be read ("check the path").
std::string ReadExperimentFile(const std::string& path);
// "a, b, c": the allowed keys or values an error message lists.
std::string Join(const std::vector<std::string>& items);

class TableReader {
 public:
  // Throws ConfigError for the first key of `table` not in `allowed`.
  TableReader(std::string source, std::string section, const toml::table& table,
              std::vector<std::string> allowed);

  bool Has(const std::string& key) const { return table_.contains(key); }
  void Read(const std::string& key, int64_t& out) const;
  void Read(const std::string& key, int& out) const;
  void Read(const std::string& key, uint64_t& out) const;
  void Read(const std::string& key, double& out) const;
  void Read(const std::string& key, bool& out) const;
  void Read(const std::string& key, std::string& out) const;
  // A string value that must be one of `choices`; returns its index, or nullopt when absent.
  std::optional<size_t> ReadChoice(const std::string& key, const std::vector<std::string>& choices) const;
  // "file:line:column: [section] key" prefix for a message about `key`.
  std::string At(const std::string& key) const;
  const std::string& source() const { return source_; }

 private:
  [[noreturn]] void TypeError(const std::string& key, const char* expected) const;

  std::string source_;
  std::string section_;
  const toml::table& table_;
};

}  // namespace memsweep::config
