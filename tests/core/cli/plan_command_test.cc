// `memsweep plan` as a user runs it: lists the cells of a matrix, or exits 2 on bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "memsweep/plugin_abi.h"
#include "core/experiment/cell.h"

#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace {

namespace fs = std::filesystem;
using memsweep::testing_support::FreshTempDir;
using memsweep::testing_support::Outcome;
using memsweep::testing_support::RunMemsweep;
using memsweep::testing_support::SourcePath;

TEST(PlanCommandTest, ListsTheCellsOfTheQuickstartMatrix) {
  const Outcome out = RunMemsweep("plan " + SourcePath("experiments/quickstart.toml"));
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("experiment  quickstart\n"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("cells       4 (4 combinations x 1 repeat)\n"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("varying     strategies.batching.micro_batch_size, device.memory_budget\n"),
            std::string::npos)
      << out.output;
  for (const char* label : {"device.memory_budget=24MiB strategies.batching.micro_batch_size=2",
                            "device.memory_budget=64MiB strategies.batching.micro_batch_size=2",
                            "device.memory_budget=24MiB strategies.batching.micro_batch_size=8",
                            "device.memory_budget=64MiB strategies.batching.micro_batch_size=8"}) {
    EXPECT_NE(out.output.find(label), std::string::npos) << label << "\n" << out.output;
  }
  EXPECT_NE(out.output.find(" cell  repeat  seed  hash              parameters\n"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("\n    3       0  1234  "), std::string::npos) << out.output;
}

// The model's and the trainable parameter counts come from the shapes (nothing is built): one
// line per distinct count, naming its cells as ranges. Phi-4-mini's shape shrunk: the embedding
// 8192 x 768 and per layer qkv 768 x 1280, o 768 x 768, gate_up 768 x 4096, down 2048 x 768 and two
// norms, plus the final norm; LoRA r = 16 on the four (fused) modules: 16 x (in + out) each.
TEST(PlanCommandTest, PrintsTheParameterCountsOfEachGroupOfCells) {
  const Outcome out = RunMemsweep("plan " + SourcePath("experiments/seed-phi4mini-qlora.toml"));
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const int64_t layer = 768 * 1280 + 768 * 768 + 768 * 4096 + 2048 * 768 + 2 * 768;
  ASSERT_EQ(8192 * 768 + 4 * layer + 768, 31'464'192);
  ASSERT_EQ(4 * 16 * ((768 + 1280) + (768 + 768) + (768 + 4096) + (2048 + 768)), 720'896);
  EXPECT_NE(out.output.find("parameters  cells 0-3: 31,464,192 (31.46 M) in the model, 31,464,192 "
                            "(31.46 M) trainable\n            cells 4-11: 31,464,192 (31.46 M) in "
                            "the model, 720,896 trainable (2.29 %)\n"),
            std::string::npos)
      << out.output;
}

TEST(PlanCommandTest, SetAndRepeatsChangeThePlan) {
  const Outcome out = RunMemsweep("plan " + SourcePath("experiments/quickstart.toml") +
                                  " --set experiment.repeats=2 --set device.memory_budget=1GiB");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("cells       4 (2 combinations x 2 repeats)\n"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("\n    3       1  1235  "), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("device.memory_budget=1GiB strategies.batching.micro_batch_size=8"), std::string::npos)
      << out.output;
}

TEST(PlanCommandTest, WriteCellsWritesEveryCellAsAFileTheWorkerReads) {
  const fs::path dir = FreshTempDir("plan_cells") / "cells";
  const Outcome out = RunMemsweep("plan " + SourcePath("experiments/quickstart.toml") +
                                  " --write-cells " + dir.string());
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("cell files (run one with: memsweep worker --cell FILE --source " +
                            SourcePath("experiments/quickstart.toml") + " --result out.json)\n"),
            std::string::npos)
      << out.output;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    ++files;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const auto cell = memsweep::experiment::CellFromToml(text.str(), entry.path().string());
    EXPECT_EQ(entry.path().filename().string(),
              "cell" + std::to_string(cell.index) + "-" + cell.hash + ".toml");
    EXPECT_NE(out.output.find("    " + std::to_string(cell.index) + "  " + entry.path().string() +
                              "\n"),
              std::string::npos)
        << out.output;
  }
  EXPECT_EQ(files, 4);
}

TEST(PlanCommandTest, BadMatrixExitsTwoWithItsPosition) {
  const fs::path file = FreshTempDir("plan_bad") / "bad.toml";
  std::ofstream(file) << "[data]\npath = \""
                      << SourcePath("experiments/data/devils-dictionary.jsonl")
                      << "\"\n[matrix]\n\"strategies.batching.micro_batch_size\" = []\n";
  const Outcome out = RunMemsweep("plan " + file.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find(file.string() + ":4:42: [matrix] \"strategies.batching.micro_batch_size\" must be a "
                                            "non-empty array"),
            std::string::npos)
      << out.output;
}

// plan reads the data as run does: a malformed line is the same error.
TEST(PlanCommandTest, AMalformedDataLineExitsTwoNamingTheLine) {
  const fs::path dir = FreshTempDir("plan_bad_data");
  std::ofstream(dir / "data.jsonl") << "{\"text\": \"one\"}\n\n{\"body\": \"two\"}\n";
  std::ofstream(dir / "e.toml") << "[data]\npath = \"data.jsonl\"\n";
  const Outcome out = RunMemsweep("plan " + (dir / "e.toml").string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("error: " + (dir / "data.jsonl").string() +
                            ":3: missing field \"text\": each line must be one JSON object with "
                            "a string field \"text\""),
            std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find(" cell  repeat"), std::string::npos) << "no plan printed";
}

// A library on MEMSWEEP_PLUGIN_PATH that fails to load refuses the experiment before anything is
// expanded, as one in [plugins] paths does (it was only listed by `memsweep plugins`, and an
// experiment that named its plugin got "not a known plugin").
TEST(PlanCommandTest, ALibraryThatFailsOnThePluginPathIsRefused) {
  const std::string library = std::string(MEMSWEEP_FIXTURE_DIR) + "/fixture_wrong_abi.so";
  const Outcome out = RunMemsweep("plan " + SourcePath("experiments/quickstart.toml"),
                                  /*env=*/"MEMSWEEP_PLUGIN_PATH=" + library);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("error: MEMSWEEP_PLUGIN_PATH names libraries that failed to load:\n"
                            "  " + library + ": incompatible plugin:\n"
                            "    ABI version: expected " + std::to_string(MEMSWEEP_PLUGIN_ABI_VERSION) + ", found 999\n"
                            "    rebuild it against this memsweep's SDK\n"
                            "rebuild or remove them, or take them out of MEMSWEEP_PLUGIN_PATH "
                            "(`memsweep plugins` lists every plugin and every failure)\n"),
            std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("cells "), std::string::npos) << out.output;
}

TEST(PlanCommandTest, AnInvalidCellExitsTwoAndNamesIt) {
  const Outcome out = RunMemsweep("plan " + SourcePath("experiments/quickstart.toml") +
                                  " --set matrix.strategies.batching.micro_batch_size=[2,0]");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("micro_batch_size must be at least 1; in cell 2 "
                            "(device.memory_budget=24MiB strategies.batching.micro_batch_size=0"),
            std::string::npos)
      << out.output;
}

// A matrix over whole callback lists lists each as it reads in the file, on one line; a list
// entry out of range exits 2 naming the list's line and its entries.
TEST(PlanCommandTest, ListValuesReadAsPluginsAndEntriesAreAddressable) {
  const fs::path dir = FreshTempDir("plan_lists");
  const std::string head = "[data]\npath = \"" +
                           SourcePath("experiments/data/devils-dictionary.jsonl") + "\"\n"
                           "[[strategies.callbacks]]\nplugin = \"empty_cache\"\nevery = 10\n";
  const fs::path whole = dir / "whole.toml";
  std::ofstream(whole) << head << "[matrix]\n\"strategies.callbacks\" = "
                       << "[[{plugin = \"empty_cache\", every = 2}], "
                       << "[{plugin = \"empty_cache\", every = 3}, {plugin = \"empty_cache\"}]]\n";
  Outcome out = RunMemsweep("plan " + whole.string());
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("  strategies.callbacks=[empty_cache(every=2)]\n"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("  strategies.callbacks=[empty_cache(every=3),empty_cache]\n"),
            std::string::npos)
      << out.output;

  const fs::path entry = dir / "entry.toml";
  std::ofstream(entry) << head << "[matrix]\n\"strategies.callbacks.empty_cache.every\" = [1, 2]\n";
  out = RunMemsweep("plan " + entry.string() + " --set strategies.callbacks.0.every=5");
  ASSERT_EQ(out.exit_code, 0) << out.output;  // the --set pins the matrix key
  EXPECT_NE(out.output.find("cells       1 (1 combination x 1 repeat)"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("  strategies.callbacks.empty_cache.every=5\n"), std::string::npos)
      << out.output;

  out = RunMemsweep("plan " + entry.string() + " --set strategies.callbacks.1.every=5");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("error: --set strategies.callbacks.1.every=5: cannot set "
                            "'strategies.callbacks.1.every': 'strategies.callbacks' (" +
                            entry.string() + ":3) has no entry '1'; its entries are 0 "
                            "(empty_cache): name one by its index (0) or by its plugin"),
            std::string::npos)
      << out.output;
}

// --stages lists what runs at each stage of each cell, cells with the same listing once: the
// strategies' begin hooks before the trainer's work and their end hooks after it, in the order
// StrategyHooks calls them, and the slot capabilities the trainer asks for.
TEST(PlanCommandTest, StagesListWhatRunsAtEachStageOfEachCell) {
  const fs::path file = FreshTempDir("plan_stages") / "stages.toml";
  std::ofstream(file) << "[data]\npath = \"" << SourcePath("experiments/data/devils-dictionary.jsonl")
                      << "\"\n[strategies.precision]\nplugin = \"bf16-autocast\"\n"
                      << "[matrix]\n\"strategies.checkpointing.plugin\" = [\"none\", \"full\"]\n"
                      << "\"strategies.batching.micro_batch_size\" = [1, 2]\n";
  const Outcome out = RunMemsweep("plan " + file.string() + " --stages");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  // Two listings (one per checkpointing plugin), each shared by the two micro-batch sizes.
  size_t groups = 0;
  for (size_t at = out.output.find("\nstages of cells "); at != std::string::npos;
       at = out.output.find("\nstages of cells ", at + 1)) {
    ++groups;
  }
  EXPECT_EQ(groups, 2u) << out.output;
  EXPECT_EQ(out.output.find("\nstages of cell "), std::string::npos) << out.output;
  // The forward stage: precision's begin hook, the trainer naming the slots it runs, its end hook.
  const size_t forward = out.output.find("forward (per micro-batch)\n");
  ASSERT_NE(forward, std::string::npos) << out.output;
  const size_t begin = out.output.find("  begin  precision/bf16-autocast", forward);
  const size_t host = out.output.find("the decoder blocks through checkpointing/", forward);
  const size_t end = out.output.find("  end    precision/bf16-autocast", forward);
  const size_t backward = out.output.find("backward (per micro-batch)\n", forward);
  EXPECT_LT(begin, host) << out.output;
  EXPECT_LT(host, end) << out.output;
  EXPECT_LT(end, backward) << out.output;
  EXPECT_NE(out.output.find("checkpointing/full's runner"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("host   loss/full"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("optimizer_step (per step)\n"), std::string::npos) << out.output;

  // --cell picks one; an index that is not a cell exits 2 naming it.
  const Outcome one = RunMemsweep("plan " + file.string() + " --stages --cell 3");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("\nstages of cell 3 "), std::string::npos) << one.output;
  EXPECT_EQ(one.output.find("\nstages of cells "), std::string::npos) << one.output;
  const Outcome bad = RunMemsweep("plan " + file.string() + " --stages --cell 7");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--cell 7 is not a cell of this experiment (it has cells 0-3)"),
            std::string::npos)
      << bad.output;
}

}  // namespace
