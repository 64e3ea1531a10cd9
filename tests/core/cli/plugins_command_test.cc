// `memsweep plugins` as a user runs it, with MEMSWEEP_PLUGIN_PATH and --path.
#include <gtest/gtest.h>

#include <string>

#include "memsweep/plugin_abi.h"
#include "support/cli_runner.h"

namespace {

using memsweep::testing_support::Outcome;
using memsweep::testing_support::RunMemsweep;

TEST(PluginsCommandTest, ListsBuiltinsWithTheirParameters) {
  const Outcome out = RunMemsweep("plugins");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("batching\n  default 1.0.0  [default]\n"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("    micro_batch_size (int, default 4): rows per forward/backward pass"),
            std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("failed to load"), std::string::npos) << out.output;
}

// Lists what loaded and every failure, then exits 2: the rule for a library that fails to load
// is the same wherever it was named (docs/plugin-guide.md, "Load errors").
TEST(PluginsCommandTest, SearchesThePluginPathAndReportsFailures) {
  const std::string dir = MEMSWEEP_FIXTURE_DIR;
  const Outcome out =
      RunMemsweep("plugins --path " + dir + " 2>&1", /*env=*/"MEMSWEEP_PLUGIN_PATH=" + dir + "/good");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("  fixture-good 2.1.0\n"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("failed to load\n"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("  " + dir + "/fixture_wrong_abi.so (from --path)\n"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("ABI version: expected " + std::to_string(MEMSWEEP_PLUGIN_ABI_VERSION) + ", found 999"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("duplicate plugin 'fixture-good'"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("error: 6 plugin libraries failed to load (listed above)"),
            std::string::npos)
      << out.output;
}

// A library on MEMSWEEP_PLUGIN_PATH that fails to load is listed with where it was named, and
// the command exits 2 (it exited 0).
TEST(PluginsCommandTest, AFailedLibraryOnThePluginPathExitsTwo) {
  const std::string library = std::string(MEMSWEEP_FIXTURE_DIR) + "/fixture_wrong_abi.so";
  const Outcome out = RunMemsweep("plugins", /*env=*/"MEMSWEEP_PLUGIN_PATH=" + library);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("batching\n  default 1.0.0  [default]\n"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("failed to load\n  " + library + " (from MEMSWEEP_PLUGIN_PATH)\n"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("error: 1 plugin library failed to load (listed above)"),
            std::string::npos)
      << out.output;
}

}  // namespace
