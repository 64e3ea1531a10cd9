#include "memsweep/plugin_abi.h"
#include "core/plugin/plugin_registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/config/plugin_params_validation.h"
#include "core/config/config_error.h"
#include "memsweep/build_fingerprint.h"

namespace memsweep::plugin {
namespace {

const std::string kDir = MEMSWEEP_FIXTURE_DIR;

std::string FailureFor(const PluginRegistry& registry, const std::string& file) {
  for (const auto& f : registry.Failures()) {
    if (std::filesystem::path(f.path).filename() == file) return f.reason;
  }
  return "";
}

class FixtureRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.LoadDirectory(kDir + "/good");
    registry_.LoadDirectory(kDir);
  }
  PluginRegistry registry_;
};

TEST_F(FixtureRegistryTest, LoadsTheGoodPluginDespiteTheBrokenOnes) {
  const PluginLibrary* good = registry_.Find("callbacks", "fixture-good");
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->version(), "2.1.0");
  EXPECT_EQ(good->params().size(), 4u);
  EXPECT_EQ(registry_.Failures().size(), 6u);
}

TEST_F(FixtureRegistryTest, RejectsWrongAbiVersion) {
  EXPECT_EQ(FailureFor(registry_, "fixture_wrong_abi.so"),
            kDir + "/fixture_wrong_abi.so: incompatible plugin:\n"
                   "  ABI version: expected " + std::to_string(MEMSWEEP_PLUGIN_ABI_VERSION) + ", found 999\n"
                   "  rebuild it against this memsweep's SDK");
}

// docs/plugin-guide.md quotes the ABI version in its text and in the load errors it shows.
TEST(PluginGuideDoc, QuotesTheCurrentAbiVersion) {
  std::ifstream guide(MEMSWEEP_SOURCE_DIR "/docs/plugin-guide.md");
  ASSERT_TRUE(guide.good()) << "docs/plugin-guide.md";
  const std::string version = std::to_string(MEMSWEEP_PLUGIN_ABI_VERSION);
  int quoted = 0;
  bool states_it = false;
  for (std::string line; std::getline(guide, line);) {
    if (line.find("`MEMSWEEP_PLUGIN_ABI_VERSION` is **" + version + "**") != std::string::npos) {
      states_it = true;
    }
    const std::string expected = "ABI version: expected ";
    for (size_t at = line.find(expected); at != std::string::npos;
         at = line.find(expected, at + 1)) {
      ++quoted;
      EXPECT_EQ(line.substr(at + expected.size(), version.size() + 1), version + ",") << line;
    }
  }
  EXPECT_TRUE(states_it) << "no \"`MEMSWEEP_PLUGIN_ABI_VERSION` is **" << version << "**\"";
  EXPECT_GE(quoted, 2) << "the load-errors table and the example quote the message";
}

TEST_F(FixtureRegistryTest, ReportsEveryFingerprintMismatchInOneMessage) {
  const MemsweepBuildFingerprint host = HostFingerprint();
  EXPECT_EQ(FailureFor(registry_, "fixture_wrong_fingerprint.so"),
            kDir + "/fixture_wrong_fingerprint.so: incompatible plugin "
                   "'fixture-wrong-fingerprint':\n"
                   "  LibTorch version: expected " + std::string(host.torch_version) +
                ", found 0.4.0\n"
                "  compiler: expected " + std::string(host.compiler) + ", found gcc 4.8\n"
                "  _GLIBCXX_USE_CXX11_ABI: expected 1, found 0\n"
                "  memsweep SDK version: expected " + std::string(host.memsweep_version) +
                ", found 0.0.1\n"
                "  SDK headers (hash): expected " + std::string(host.sdk_hash) +
                ", found 0123456789abcdef (built against other SDK headers)\n"
                "  rebuild it against this memsweep's SDK");
}

TEST_F(FixtureRegistryTest, RejectsALibraryWithoutTheEntrySymbol) {
  EXPECT_EQ(FailureFor(registry_, "fixture_no_entry.so"),
            kDir + "/fixture_no_entry.so: not a memsweep plugin: it does not export "
                   "memsweep_plugin_info (define it with MEMSWEEP_PLUGIN from <memsweep/plugin.h>)");
}

TEST_F(FixtureRegistryTest, ReportsAThrowingRegisterFunction) {
  EXPECT_EQ(FailureFor(registry_, "fixture_throwing_register.so"),
            kDir + "/fixture_throwing_register.so: plugin 'fixture-throwing-register' failed to "
                   "register: its register function threw: fixture register exploded");
}

TEST_F(FixtureRegistryTest, RejectsADuplicateName) {
  EXPECT_EQ(FailureFor(registry_, "fixture_duplicate.so"),
            kDir + "/fixture_duplicate.so: duplicate plugin 'fixture-good' in slot 'callbacks': "
                   "already loaded from " + kDir + "/good/fixture_good.so");
}

TEST_F(FixtureRegistryTest, ReportsEveryParameterSchemaProblem) {
  EXPECT_EQ(FailureFor(registry_, "fixture_bad_schema.so"),
            kDir + "/fixture_bad_schema.so: plugin 'fixture-bad-schema' has a bad parameter "
                   "schema:\n"
                   "  parameter 'every' is declared twice\n"
                   "  parameter 'ratio' default \"half\" is not a TOML float\n"
                   "  parameter 'name' is required but has a default");
}

TEST_F(FixtureRegistryTest, ValidatesParametersAgainstTheSchema) {
  const PluginLibrary& good = *registry_.Find("callbacks", "fixture-good");
  const std::string source = "exp.toml";
  auto validate = [&](const std::string& text) {
    const toml::table table = toml::parse(text, source);
    return config::ValidateParams(good, table, source, "[[strategies.callbacks]]");
  };
  const PluginParams params = validate("plugin = \"fixture-good\"\nmust = 3\nlimit = \"2KiB\"\n");
  EXPECT_EQ(params.Int("must"), 3);
  EXPECT_EQ(params.Bytes("limit"), 2048);
  EXPECT_EQ(params.String("label"), "fixture");  // default filled in
  EXPECT_DOUBLE_EQ(params.Float("weight"), 1.0);

  auto error = [&](const std::string& text) {
    try {
      validate(text);
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("must = 1\nlabl = \"x\"\n"),
            "exp.toml:2:1: unknown key 'labl' in [[strategies.callbacks]] (plugin 'fixture-good'); "
            "allowed keys: plugin, label, weight, limit, must");
  EXPECT_EQ(error("must = \"three\"\n"),
            "exp.toml:1:8: [[strategies.callbacks]] (plugin 'fixture-good') must must be an integer");
  EXPECT_NE(error("label = \"x\"\n").find("required parameter 'must' is missing"),
            std::string::npos);
  EXPECT_NE(error("must = 1\nlimit = \"lots\"\n").find("limit must be a size"), std::string::npos);
}

TEST(BuiltinPluginsTest, EverySlotHasItsDefault) {
  const PluginRegistry& registry = PluginRegistry::Default();
  EXPECT_TRUE(registry.Failures().empty())
      << registry.Failures().front().path << ": " << registry.Failures().front().reason;
  for (const auto& slot : SlotNames()) {
    if (slot == "callbacks") continue;
    EXPECT_NE(registry.DefaultFor(slot), nullptr) << slot;
  }
}

TEST(BuiltinPluginsTest, PluginsExportOnlyTheEntrySymbol) {
  const std::string command = "nm -D --defined-only " + BuiltinPluginDirectory() +
                              "/attention-eager.so | awk '{print $3}'";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string symbols;
  char buffer[256];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) symbols += buffer;
  pclose(pipe);
  EXPECT_EQ(symbols, "memsweep_plugin_info\n");
}

}  // namespace
}  // namespace memsweep::plugin
