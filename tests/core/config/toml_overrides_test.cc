// --set overrides: TOML values (a bare word is a string), nested tables created on the way,
// list entries named by index or by plugin, and messages that say what to write instead.
#include "core/config/toml_overrides.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "core/config/config_error.h"

namespace memsweep::config {
namespace {

toml::table ParseFile(std::string_view text, std::string_view path) {
  return toml::parse(text, path);
}

std::string OverrideError(toml::table& root, const std::string& assignment) {
  try {
    ApplyOverride(root, assignment);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(TomlOverridesTest, SetsValuesThroughTablesAndListEntries) {
  toml::table root = ParseFile(
      "[[strategies.callbacks]]\nplugin = \"empty_cache\"\nevery = 10\n"
      "[[strategies.callbacks]]\nplugin = \"grad_clip\"\nmax_norm = 1.0\n"
      "[optimizer]\nlr = 0.003\n",
      "x.toml");
  ApplyOverride(root, "optimizer.lr=1e-3");
  ApplyOverride(root, "strategies.precision.plugin=bf16");  // a bare word: a string
  ApplyOverride(root, "device.memory_budget=\"32MiB\"");
  EXPECT_EQ(root["optimizer"]["lr"].value<double>(), 1e-3);
  EXPECT_EQ(root["strategies"]["precision"]["plugin"].value<std::string>(), "bf16");
  EXPECT_EQ(root["device"]["memory_budget"].value<std::string>(), "32MiB");
  // List entries, by index or by plugin; the list keeps its entries.
  ApplyOverride(root, "strategies.callbacks.0.every=3");
  ApplyOverride(root, "strategies.callbacks.grad_clip.max_norm=0.5");
  EXPECT_EQ(root["strategies"]["callbacks"][0]["every"].value<int64_t>(), 3);
  EXPECT_EQ(root["strategies"]["callbacks"][1]["max_norm"].value<double>(), 0.5);
  EXPECT_EQ(root["strategies"]["callbacks"].as_array()->size(), 2u);
  EXPECT_EQ(OverrideError(root, "strategies.callbacks.clip.max_norm=1"),
            "--set strategies.callbacks.clip.max_norm=1: cannot set "
            "'strategies.callbacks.clip.max_norm': 'strategies.callbacks' (x.toml:1) has no entry "
            "'clip'; its entries are 0 (empty_cache), 1 (grad_clip): name one by its index (0 to "
            "1) or by its plugin");
}

TEST(TomlOverridesTest, MalformedAssignmentsSayWhatToWrite) {
  toml::table root = ParseFile("[optimizer]\nlr = 0.003\n", "x.toml");
  EXPECT_EQ(OverrideError(root, "optimizer.lr"),
            "--set optimizer.lr: expected section.key=value");
  EXPECT_EQ(OverrideError(root, "optimizer.lr.x=1"),
            "--set optimizer.lr.x=1: cannot set 'optimizer.lr.x': 'optimizer.lr' is a value, not a "
            "table; change the key");
  // The example is a key the file format accepts (experiment_plan_test.cc plans with it).
  EXPECT_EQ(OverrideError(root, "seq_len=64"),
            "--set seq_len=64: the key must name its section, e.g. "
            "strategies.batching.seq_len=128");
}

// Found by the experiment_plan fuzz target (tools/fuzz): a key with a byte that is not UTF-8
// reached the document and failed, as an internal error, where the cell's hash serialises it.
TEST(TomlOverridesTest, AnAssignmentThatIsNotUtf8IsRefusedNamingTheByte) {
  toml::table root;
  EXPECT_EQ(OverrideError(root, "experiment.ste\xD3ps=1"),
            "--set experiment.ste\\xD3ps=1: not valid UTF-8 (byte 15); write keys and values in "
            "UTF-8");
  EXPECT_NE(OverrideError(root, "data.path=caf\xE9").find("not valid UTF-8 (byte 14)"),
            std::string::npos);
  EXPECT_NE(OverrideError(root, "data.path=\xED\xA0\x80").find("not valid UTF-8"),
            std::string::npos);  // a surrogate
  EXPECT_NE(OverrideError(root, "data.path=\xC0\xAF").find("not valid UTF-8"),
            std::string::npos);  // an overlong '/'
  EXPECT_TRUE(root.empty());
  EXPECT_EQ(OverrideError(root, "data.path=caf\xC3\xA9 \xF0\x9F\x98\x80"), "");
  EXPECT_EQ(root["data"]["path"].value_or(std::string()), "caf\xC3\xA9 \xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace memsweep::config
