// What a third-party plugin's author meets through the memsweep binary: a constructor's range
// error points at the parameter's own line in `estimate` as in `plan`, and `plan` and `estimate`
// create each plugin as few times as they can (counted by the counting fixture, one line per
// construction in its file, whatever process constructs it).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace {

namespace fs = std::filesystem;
using memsweep::testing_support::FreshTempDir;
using memsweep::testing_support::Outcome;
using memsweep::testing_support::RunMemsweep;
using memsweep::testing_support::SourcePath;

const std::string kFixtures = MEMSWEEP_FIXTURE_DIR;

// A tiny experiment loading the fixtures in `plugins` (folders under the fixture directory),
// `extra` appended.
std::string TinyExperiment(const std::string& plugins, const std::string& extra) {
  return "[experiment]\nname = \"plugin_errors\"\nsteps = 1\n[model]\npreset = \"tiny\"\n"
         "[data]\npath = \"" + SourcePath("experiments/data/devils-dictionary.jsonl") + "\"\n"
         "[device]\nthreads = 1\n[plugins]\npaths = [\"" + kFixtures + "/" + plugins + "\"]\n"
         "[strategies.batching]\nseq_len = 32\nmicro_batch_size = 1\n" + extra;
}

// "line:column" of `needle`'s first character in `text`, counted from 1.
std::string PositionOf(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  const size_t line_start = text.rfind('\n', at) + 1;  // npos + 1 = 0 on the first line
  size_t line = 1;
  for (size_t i = 0; i < at; ++i) line += text[i] == '\n' ? 1 : 0;
  return std::to_string(line) + ":" + std::to_string(at - line_start + 1);
}

size_t Lines(const fs::path& file) {
  std::ifstream in(file);
  size_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

// A constructor's range error points at the key its message names — here set by a [matrix]
// line — in `estimate` too (which used to drop the line and column), as in `plan`.
TEST(PluginErrorsTest, AConstructorsRangeErrorPointsAtTheMatrixValueInPlanAndEstimate) {
  const fs::path dir = FreshTempDir("range_error");
  const std::string text =
      TinyExperiment("throwing_constructor",
                 "[strategies.checkpointing]\nplugin = \"fixture-throwing-constructor\"\n"
                 "[matrix]\n\"strategies.checkpointing.layers\" = [1, 3]\n");
  const fs::path file = dir / "e.toml";
  std::ofstream(file) << text;
  const std::string expected =
      file.string() + ":" + PositionOf(text, "3]\n") +
      ": [strategies.checkpointing] plugin 'fixture-throwing-constructor' (checkpointing) could "
      "not be created: layers = 3 is more than this fixture allows: use layers = 1; in cell 1 "
      "(strategies.checkpointing.layers=3, repeat 0, seed 1234)\n";
  for (const std::string command : {"plan", "estimate"}) {
    const Outcome out = RunMemsweep(command + " " + file.string());
    EXPECT_EQ(out.exit_code, 2) << command << "\n" << out.output;
    EXPECT_NE(out.output.find("error: " + expected), std::string::npos)
        << command << "\n" << out.output;
  }
}

// An experiment of two cells with the counting fixture, which appends a line to `count` per
// construction.
fs::path CountingExperiment(const fs::path& dir, const fs::path& count) {
  const fs::path file = dir / "e.toml";
  std::ofstream(file) << TinyExperiment(
      "counting", "[[strategies.callbacks]]\nplugin = \"fixture-counting\"\nfile = \"" +
                      count.string() +
                      "\"\n[matrix]\n\"strategies.batching.micro_batch_size\" = [1, 2]\n");
  return file;
}

// `estimate` creates each cell's plugins twice: once to validate the cell before anything is
// estimated, once for the estimate's own run on the meta device (which validates the run again,
// on that device, and trains it); reading the cell for that run creates none.
TEST(PluginErrorsTest, EstimateCreatesEachPluginTwicePerCell) {
  const fs::path dir = FreshTempDir("estimate_construction_count");
  const fs::path count = dir / "count.txt";
  const Outcome estimate = RunMemsweep("estimate " + CountingExperiment(dir, count).string());
  ASSERT_EQ(estimate.exit_code, 0) << estimate.output;
  EXPECT_EQ(Lines(count), 4u) << "estimate: validation and the estimate's run, per cell";
}

// `plan` creates each cell's plugins once: its validation, which what it prints comes from.
TEST(PluginErrorsTest, PlanCreatesEachPluginOncePerCell) {
  const fs::path dir = FreshTempDir("plan_construction_count");
  const fs::path count = dir / "count.txt";
  const Outcome plan = RunMemsweep("plan " + CountingExperiment(dir, count).string());
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_EQ(Lines(count), 2u) << "plan: one construction per cell";
}

}  // namespace
