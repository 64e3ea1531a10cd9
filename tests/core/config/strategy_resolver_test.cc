// Choosing and creating an experiment's plugins: where a plugin's own errors point, and the rule
// for libraries that fail to load (docs/plugin-guide.md, "Load errors").
#include "memsweep/plugin_abi.h"
#include "core/config/strategy_resolver.h"

#include <gtest/gtest.h>

#include <string>

#include "core/config/config_error.h"
#include "core/config/run_config_loader.h"
#include "support/run_configs.h"

namespace memsweep::config::strategy_resolver_test {
namespace {

using testing_support::SourcePath;

const std::string kExperiment = SourcePath("experiments/test.toml");
const std::string kFixtures = MEMSWEEP_FIXTURE_DIR;

std::string ConfigErrorOf(const std::string& text) {
  try {
    ParseRunConfig(text, kExperiment, {});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A constructor that refuses its parameters is pointed at like every other configuration
// error: the file, the line and column of the parameter its message names, the plugin's table,
// then the plugin's message; a message that names none of the table's keys, at the table.
TEST(StrategyResolverTest, AConstructorErrorNamesTheLineAndThePluginsTable) {
  const std::string text = "[data]\npath = \"data/devils-dictionary.jsonl\"\n"
                           "[plugins]\npaths = [\"" + kFixtures + "/throwing_constructor\"]\n"
                           "\n"
                           "[strategies.checkpointing]\n"
                           "plugin = \"fixture-throwing-constructor\"\n"
                           "layers = 3\n";
  EXPECT_EQ(ConfigErrorOf(text),
            kExperiment + ":8:10: [strategies.checkpointing] plugin 'fixture-throwing-constructor' "
                          "(checkpointing) could not be created: layers = 3 is more than this "
                          "fixture allows: use layers = 1");
  // Within its range it is created.
  EXPECT_EQ(ConfigErrorOf(text.substr(0, text.size() - 2) + "1\n"), "");
}

// A library named in [plugins] paths that fails to load: the entry's line and column, the
// library's own message, what to do.
TEST(StrategyResolverTest, ALibraryFromPluginsPathsThatFailsNamesItsEntry) {
  const std::string library = kFixtures + "/fixture_wrong_abi.so";
  const std::string text = "[data]\npath = \"data/devils-dictionary.jsonl\"\n"
                           "[plugins]\npaths = [\"" + library + "\"]\n";
  EXPECT_EQ(ConfigErrorOf(text),
            kExperiment + ":4:10: [plugins] paths entry '" + library + "': failed to load:\n  " +
                library + ": incompatible plugin:\n"
                          "    ABI version: expected " + std::to_string(MEMSWEEP_PLUGIN_ABI_VERSION) + ", found 999\n"
                          "    rebuild it against this memsweep's SDK\n"
                          "rebuild or remove the library, or take it out of [plugins] paths");
  // The same again (the library was tried already): the same refusal, not a silent skip.
  EXPECT_EQ(ConfigErrorOf(text).rfind(kExperiment + ":4:10: [plugins] paths entry", 0), 0u);
}

}  // namespace
}  // namespace memsweep::config::strategy_resolver_test
