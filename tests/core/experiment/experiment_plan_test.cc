// Experiment plans: matrix errors with file:line:column, validation of every cell (errors name
// the cell), cell hashes, the TOML round trip of cells, and the bundled experiment files.
#include "core/experiment/experiment_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "core/config/config_error.h"
#include "core/config/run_config_loader.h"
#include "core/env/cuda_probe.h"
#include "support/run_configs.h"

namespace memsweep::experiment {
namespace {

namespace fs = std::filesystem;
using testing_support::SourcePath;

const std::string kSource = SourcePath("experiments/test.toml");
const std::string kData = "[data]\npath = \"data/devils-dictionary.jsonl\"\n";

void AcceptAll(const Cell&) {}

std::string ErrorOf(const std::string& text, const CellValidator& validate = AcceptAll,
                    const std::vector<std::string>& overrides = {}) {
  try {
    ParseExperimentPlan(text, kSource, overrides, validate);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

// The error must start with "file:line:column: " and contain `problem`.
void ExpectErrorAt(const std::string& text, const std::string& position,
                   const std::string& problem) {
  const std::string error = ErrorOf(text);
  EXPECT_EQ(error.rfind(kSource + ":" + position + ": ", 0), 0u) << error;
  EXPECT_NE(error.find(problem), std::string::npos) << error;
}

TEST(ExperimentPlanTest, MatrixValuesMustBeNonEmptyArrays) {
  ExpectErrorAt("[matrix]\n\"strategies.batching.micro_batch_size\" = 2\n", "2:42",
                "[matrix] \"strategies.batching.micro_batch_size\" must be a non-empty array of "
                "the values");
  ExpectErrorAt("[matrix]\n\"x.a\" = [1]\n\"x.b\" = []\n", "3:9", "\"x.b\" must be a non-empty");
  ExpectErrorAt("[matrix.data]\nseq_len = \"64\"\n", "2:11",
                "\"data.seq_len\" must be a non-empty");
  ExpectErrorAt("matrix = 3\n", "1:10", "'matrix' must be a table [matrix]");
}

TEST(ExperimentPlanTest, MatrixKeysMustBeDottedAndDistinct) {
  ExpectErrorAt("[matrix]\nsteps = [1, 2]\n", "2:1",
                "[matrix] key 'steps' must name a section and a key");
  ExpectErrorAt("[matrix]\n\"data.seq_len\" = [1]\n[matrix.data]\nseq_len = [2]\n", "4:1",
                "\"data.seq_len\" is given twice");
  ExpectErrorAt("[matrix]\n\"x.t\" = [{u = 1}]\n\"x.t.u\" = [2]\n", "3:1",
                "[matrix] keys 'x.t' and 'x.t.u' overlap");
}

TEST(ExperimentPlanTest, ExcludeAndIncludeMustBeArraysOfTables) {
  ExpectErrorAt("[matrix]\n\"x.a\" = [1]\nexclude = { \"x.a\" = 1 }\n", "3:11",
                "[matrix] exclude must be an array of tables: write each entry as "
                "[[matrix.exclude]]");
  ExpectErrorAt("[matrix]\n\"x.a\" = [1]\nexclude = [1]\n", "3:12",
                "[matrix] exclude must be an array of tables");
  ExpectErrorAt("[matrix]\n\"x.a\" = [1]\ninclude = \"x.a=2\"\n", "3:11",
                "[matrix] include must be an array of tables");
}

TEST(ExperimentPlanTest, ExcludeAndIncludeKeysMustBeDotted) {
  ExpectErrorAt("[matrix]\n\"x.a\" = [1, 2]\n[[matrix.exclude]]\na = 1\n", "4:1",
                "[[matrix.exclude]] key 'a' must be a dotted key");
  ExpectErrorAt("[matrix]\n\"x.a\" = [1, 2]\n[[matrix.include]]\nb = 1\n", "4:1",
                "[[matrix.include]] key 'b' must be a dotted key");
  ExpectErrorAt("[matrix]\n\"x.a\" = [1, 2]\n[[matrix.exclude]]\n\"x.b\" = 1\n", "4:9",
                "[[matrix.exclude]] key 'x.b' is not a key of the matrix; exclude entries match "
                "combinations by matrix keys: x.a");
  ExpectErrorAt("[matrix]\n\"x.a\" = [1, 2]\n[[matrix.exclude]]\n", "3:1",
                "an empty [[matrix.exclude]] entry would remove every combination");
}

TEST(ExperimentPlanTest, AMatrixWithoutCellsIsAnError) {
  ExpectErrorAt(
      "[matrix]\n\"x.a\" = [1, 2]\n[[matrix.exclude]]\n\"x.a\" = 1\n"
      "[[matrix.exclude]]\n\"x.a\" = 2\n",
      "1:1", "[matrix] expands to zero cells: the exclude entries remove every");
  ExpectErrorAt("[matrix]\n", "1:1", "[matrix] lists no keys to vary");
}

TEST(ExperimentPlanTest, TwoCellsThatAreTheSameRunAreAnError) {
  const std::string error = ErrorOf("[matrix]\n\"x.a\" = [1, 1]\n");
  EXPECT_NE(error.find("cell 0 (x.a=1, repeat 0, seed 1234) and cell 1 (x.a=1, repeat 0, seed "
                       "1234) are the same run"),
            std::string::npos)
      << error;
}

TEST(ExperimentPlanTest, ValidatorErrorsNameTheCellAndPointAtTheMatrixValue) {
  const std::string text = kData + "[matrix]\n\"experiment.steps\" = [2, 0]\n";
  const std::string error = ErrorOf(text, ValidateCellAsRun);
  EXPECT_EQ(error, kSource +
                       ":4:26: [experiment] steps must be at least 1; in cell 1 "
                       "(experiment.steps=0, repeat 0, seed 1234)");
  // A plugin's own range check names the plugin and the cell, at the matrix value that set the
  // parameter its message names (the file has no [strategies.batching] table to point at).
  EXPECT_EQ(ErrorOf(kData + "[matrix]\n\"strategies.batching.micro_batch_size\" = [2, 0]\n",
                    ValidateCellAsRun),
            kSource + ":4:46: [strategies.batching] plugin 'default' (batching) could not be "
                      "created: micro_batch_size must be at least 1; in cell 1 "
                      "(strategies.batching.micro_batch_size=0, repeat 0, seed 1234)");

  const std::string typo =
      ErrorOf(kData + "[matrix]\n\"data.micro_batch_sise\" = [2]\n", ValidateCellAsRun);
  EXPECT_EQ(typo.rfind(kSource + ":4:1: unknown key 'micro_batch_sise' in [data]", 0), 0u) << typo;

  int calls = 0;
  const std::string custom = ErrorOf(kData + "[matrix]\n\"experiment.steps\" = [2, 8, 4]\n",
                                     [&calls](const Cell& cell) {
                                       ++calls;
                                       if (cell.params["experiment.steps"] == 8) {
                                         throw config::ConfigError("8 rows do not fit");
                                       }
                                     });
  EXPECT_EQ(custom, "8 rows do not fit; in cell 1 (experiment.steps=8, repeat 0, seed 1234)");
  EXPECT_EQ(calls, 3) << "the cells after a bad one are validated too";

  calls = 0;
  ParseExperimentPlan(kData + "[experiment]\nrepeats = 2\n[matrix]\n\"data.seq_len\" = [8, 16]\n",
                      kSource, {}, [&calls](const Cell&) { ++calls; });
  EXPECT_EQ(calls, 4) << "every cell is validated";
}

// Every bad cell is reported, as a compiler reports every error: one line per distinct message
// with its cell and the other cells that share it; at most kMaxCellErrors lines, then a count.
TEST(ExperimentPlanTest, EveryBadCellIsReportedUpToALimit) {
  EXPECT_EQ(ErrorOf(kData + "[matrix]\n\"experiment.steps\" = [0, 2, -1]\n", ValidateCellAsRun),
            kSource + ":4:23: [experiment] steps must be at least 1; in cell 0 (experiment.steps=0, "
                      "repeat 0, seed 1234)\n" +
                kSource + ":4:29: [experiment] steps must be at least 1; in cell 2 "
                          "(experiment.steps=-1, repeat 0, seed 1234)");
  // A mistake outside the matrix is in every cell: said once.
  EXPECT_EQ(ErrorOf(kData + "[optimizer]\nlr = 0\n[matrix]\n\"experiment.steps\" = [1, 2, 3]\n",
                    ValidateCellAsRun),
            kSource + ":4:6: [optimizer] lr must be positive; in cell 0 (experiment.steps=1, "
                      "repeat 0, seed 1234) and cells 1, 2");
  // Cells the matrix cannot even build are among them.
  const std::string unbuilt = ErrorOf(
      kData + "[matrix]\n\"experiment.steps\" = [0, 2]\n\"experiment.seed\" = [1, 2]\n"
              "[[matrix.include]]\n\"experiment.steps\" = 2\n\"experiment.repeats\" = 0\n",
      ValidateCellAsRun);
  EXPECT_NE(unbuilt.find("[experiment] repeats must be an integer of at least 1; in cell 2 ("),
            std::string::npos)
      << unbuilt;
  EXPECT_NE(unbuilt.find("experiment.steps=2) and cell 3"),
            std::string::npos)
      << unbuilt;
  // Past the limit: the first kMaxCellErrors, then how many more.
  std::string values;
  for (int i = 0; i < 25; ++i) values += (i == 0 ? "" : ", ") + std::to_string(-i);
  const std::string many =
      ErrorOf(kData + "[matrix]\n\"experiment.steps\" = [" + values + "]\n", ValidateCellAsRun);
  EXPECT_EQ(std::count(many.begin(), many.end(), '\n'), static_cast<long>(kMaxCellErrors)) << many;
  EXPECT_NE(many.find("; in cell 19 (experiment.steps=-19, repeat 0, seed 1234)\nand 5 more "
                      "errors"),
            std::string::npos)
      << many;
  EXPECT_EQ(many.substr(many.rfind('\n') + 1), "and 5 more errors");
}

// A cell file keeps where the experiment file set each value: errors about a cell read from
// one (a worker's) point at the experiment file's lines, a matrix value at its matrix line.
TEST(ExperimentPlanTest, ACellReadFromItsFilePointsAtTheExperimentFilesLines) {
  const ExperimentPlan plan = ParseExperimentPlan(
      kData + "[optimizer]\nlr = 0\n[matrix]\n\"experiment.steps\" = [0]\n", kSource, {},
      AcceptAll);
  const auto error_of = [](const Cell& read) {
    try {
      config::RunConfigFromTable(read.document, kSource);
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const Cell cell = CellFromToml(CellToToml(plan.cells[0]), "/tmp/work/cell.toml");
  const std::string error = error_of(cell);
  EXPECT_EQ(error.rfind("/tmp/work/cell.toml:", 0), 0u) << error;
  EXPECT_EQ(cell.InExperimentFile(error),
            kSource + ":6:23: [experiment] steps must be at least 1");
  // Written again (a cell read from a file), it still knows the experiment file's positions.
  const Cell again = CellFromToml(CellToToml(cell), "other.toml");
  EXPECT_EQ(again.InExperimentFile(error_of(again)),
            kSource + ":6:23: [experiment] steps must be at least 1");
  // Positions it does not know, and other text, stay as they are.
  EXPECT_EQ(cell.InExperimentFile("/tmp/work/cell.toml:999:1: x; /tmp/work/cell.toml: y"),
            "/tmp/work/cell.toml:999:1: x; /tmp/work/cell.toml: y");
}

TEST(ExperimentPlanTest, HashIsTheCanonicalContent) {
  const std::string text =
      "[experiment]\nname = \"pinned\"\nseed = 7\n[data]\npath = \"data.jsonl\"\n"
      "[strategies.batching]\nmicro_batch_size = 2\n";
  const std::string reordered =
      "[strategies.batching]\nmicro_batch_size = 2\n[data]\npath = \"data.jsonl\"\n"
      "[experiment]\nseed = 7\nname = \"pinned\"\n";
  const ExperimentPlan plan = ParseExperimentPlan(text, kSource, {}, AcceptAll);
  ASSERT_EQ(plan.cells.size(), 1u);
  // SHA-256 of {"data":{"path":"data.jsonl"},"experiment":{"name":"pinned","seed":7},
  // "strategies":{"batching":{"micro_batch_size":2}}}, first 16 hex digits.
  EXPECT_EQ(plan.cells[0].hash, "b71e622040d47afa");
  EXPECT_EQ(ParseExperimentPlan(reordered, kSource, {}, AcceptAll).cells[0].hash,
            "b71e622040d47afa");
  EXPECT_EQ(CellHash(config::ParseToml(reordered, "other.toml")), "b71e622040d47afa");
  EXPECT_NE(
      ParseExperimentPlan(text, kSource, {"strategies.batching.micro_batch_size=3"}, AcceptAll)
          .cells[0]
          .hash,
      "b71e622040d47afa");
  // The matrix form of the same run is the same cell.
  EXPECT_EQ(ParseExperimentPlan(text + "[matrix]\n\"strategies.batching.micro_batch_size\" = [2]\n",
                                kSource, {}, AcceptAll)
                .cells[0]
                .hash,
            "b71e622040d47afa");
}

void ExpectRoundTrip(const Cell& cell) {
  const std::string text = CellToToml(cell);
  const Cell back = CellFromToml(text, "cell.toml");
  EXPECT_EQ(back.hash, cell.hash) << text;
  EXPECT_EQ(back.index, cell.index);
  EXPECT_EQ(back.combination, cell.combination);
  EXPECT_EQ(back.repeat, cell.repeat);
  EXPECT_EQ(back.seed, cell.seed);
  EXPECT_EQ(back.source, cell.source);
  EXPECT_EQ(back.params, cell.params) << text;
  EXPECT_TRUE(back.document == cell.document) << text;
}

TEST(ExperimentPlanTest, CellsSurviveATomlRoundTrip) {
  const ExperimentPlan plan = LoadExperimentPlan(SourcePath("experiments/quickstart.toml"));
  for (const Cell& cell : plan.cells) ExpectRoundTrip(cell);

  const ExperimentPlan odd = ParseExperimentPlan(
      "[experiment]\nname = 'quote \" and \\\\ ünïcode'\nrepeats = 2\n[model]\n"
      "[optimizer]\nlr = 0.1\neps = 1e-8\nbeta2 = 0.95\nbig = 9007199254740993\n"
      "[strategies.precision]\nplugin = \"bf16-autocast\"\nscale = [1.5, 2, \"x\"]\n"
      "inline = { a = 1, b = { c = 3e-3 } }\n"
      "[matrix]\n\"optimizer.lr\" = [0.1, 0.30000000000000004]\n"
      "\"strategies.precision\" = [{ plugin = \"fp32\" }, { plugin = \"x\", k = 1.0 }]\n",
      kSource, {}, AcceptAll);
  ASSERT_EQ(odd.cells.size(), 8u);
  for (const Cell& cell : odd.cells) ExpectRoundTrip(cell);
  EXPECT_EQ(odd.cells[7].Label(),
            "optimizer.lr=0.30000000000000004 strategies.precision=x(k=1.0)");
}

TEST(ExperimentPlanTest, ACellTextThatWasChangedIsRejected) {
  const ExperimentPlan plan = LoadExperimentPlan(SourcePath("experiments/quickstart.toml"));
  std::string text = CellToToml(plan.cells[0]);
  const size_t at = text.find("seq_len = 256");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 13, "seq_len = 128");
  try {
    CellFromToml(text, "cell.toml");
    FAIL() << "expected a ConfigError";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cell.toml: the cell's content hashes to"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(CellFromToml("[data]\npath = \"x\"\n", "cell.toml"), config::ConfigError);
}

TEST(ExperimentPlanTest, QuickstartIsASmallMatrix) {
  const ExperimentPlan plan = LoadExperimentPlan(SourcePath("experiments/quickstart.toml"));
  EXPECT_EQ(plan.name, "quickstart");
  ASSERT_EQ(plan.cells.size(), 4u);
  EXPECT_EQ(plan.cells[0].Label(), "device.memory_budget=24MiB strategies.batching.micro_batch_size=2");
  EXPECT_EQ(plan.cells[1].Label(), "device.memory_budget=64MiB strategies.batching.micro_batch_size=2");
  EXPECT_EQ(plan.cells[2].Label(), "device.memory_budget=24MiB strategies.batching.micro_batch_size=8");
  EXPECT_EQ(plan.cells[3].Label(), "device.memory_budget=64MiB strategies.batching.micro_batch_size=8");
  // Every cell is a valid single run.
  for (const Cell& cell : plan.cells) {
    const config::RunConfig cfg = config::RunConfigFromTable(cell.document, cell.source);
    EXPECT_EQ(cfg.data.path, SourcePath("experiments/data/devils-dictionary.jsonl"));
  }
}

// Cells that ask for a CUDA device (the GPU experiments) are validated as they are where a GPU is
// usable; elsewhere as the same cell on the CPU device, so that everything but the device is
// checked on every machine, and their own plan must fail with the CUDA refusal alone.
TEST(ExperimentPlanTest, EveryBundledExperimentHasAValidPlan) {
  const bool gpu = env::ProbeCuda().usable();
  int files = 0, cuda_cells = 0;
  const CellValidator validate = [&](const Cell& cell) {
    Cell as_run = cell;
    toml::table* device = as_run.document["device"].as_table();
    if (!gpu && device != nullptr && device->get_as<std::string>("type") != nullptr &&
        device->get_as<std::string>("type")->get() == "cuda") {
      ++cuda_cells;
      EXPECT_THROW(ValidateCellAsRun(cell), config::ConfigError);
      device->insert_or_assign("type", "cpu");
    }
    ValidateCellAsRun(as_run);
  };
  for (const auto& entry : fs::directory_iterator(SourcePath("experiments"))) {
    if (entry.path().extension() != ".toml") continue;
    ++files;
    try {
      const ExperimentPlan plan = LoadExperimentPlan(entry.path().string(), {}, validate);
      EXPECT_FALSE(plan.cells.empty()) << entry.path();
    } catch (const config::ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_GT(files, 0);
  if (!gpu) EXPECT_GT(cuda_cells, 0);  // experiments/gpu-quickstart.toml at least
}

// The plan of `text` with every cell validated as a run: "" when it is accepted, else the error.
std::string ValidatedPlanError(const std::string& text,
                               const std::vector<std::string>& overrides = {}) {
  return ErrorOf(text, ValidateCellAsRun, overrides);
}

// The first match of `pattern` in `error` (group 1 and on), or no groups when nothing matches.
std::vector<std::string> Suggested(const std::string& error, const std::string& pattern) {
  std::smatch match;
  if (!std::regex_search(error, match, std::regex(pattern))) return {};
  std::vector<std::string> groups;
  for (size_t i = 1; i < match.size(); ++i) groups.push_back(match[i].str());
  return groups;
}

// Each key an error message suggests, taken from the message's own text, is followed as a user
// would: the planner accepts it and every cell validates as a run.
TEST(ExperimentPlanTest, EveryKeyAnErrorSuggestsIsAcceptedByThePlanner) {
  // [matrix] key 'steps' must name a section and a key, e.g. "<key>" = [1, 2]
  std::string error = ErrorOf("[matrix]\nsteps = [1, 2]\n");
  std::vector<std::string> hint = Suggested(error, R"re(e\.g\. ("[^"]+" = \[[^\]]*\]))re");
  ASSERT_EQ(hint.size(), 1u) << error;
  EXPECT_EQ(ValidatedPlanError(kData + "[matrix]\n" + hint[0] + "\n"), "") << error;

  // [[matrix.include]] key 'b' must be a dotted key such as "<key>"
  for (const char* entry : {"include", "exclude"}) {
    error = ErrorOf("[matrix]\n\"x.a\" = [1, 2]\n[[matrix." + std::string(entry) + "]]\nb = 1\n");
    hint = Suggested(error, R"re(such as ("[^"]+"))re");
    ASSERT_EQ(hint.size(), 1u) << error;
    EXPECT_EQ(ValidatedPlanError(kData + "[matrix]\n" + hint[0] + " = [1, 2]\n[[matrix." + entry +
                                 "]]\n" + hint[0] + " = 2\n"),
              "")
        << error;
  }

  // [matrix] lists no keys to vary: add one such as "<key>" = [1, 2], or remove [matrix]
  error = ErrorOf("[matrix]\n");
  hint = Suggested(error, R"re(such as ("[^"]+" = \[[^\]]*\]))re");
  ASSERT_EQ(hint.size(), 1u) << error;
  EXPECT_EQ(ValidatedPlanError(kData + "[matrix]\n" + hint[0] + "\n"), "") << error;

  // --set foo=1: the key must name its section, e.g. <key>=<value>
  error = ErrorOf(kData, AcceptAll, {"seq_len=64"});
  hint = Suggested(error, R"re(e\.g\. (\S+=\S+))re");
  ASSERT_EQ(hint.size(), 1u) << error;
  EXPECT_EQ(ValidatedPlanError(kData, {hint[0]}), "") << error;

  // [[ablation]] "x" changes nothing; give the dotted keys it sets, e.g. "<key>" = "<value>"
  error = ErrorOf("[[ablation]]\nname = \"x\"\n");
  hint = Suggested(error, R"re(e\.g\. ("[^"]+" = "[^"]*"))re");
  ASSERT_EQ(hint.size(), 1u) << error;
  EXPECT_EQ(ValidatedPlanError(kData + "[[ablation]]\nname = \"x\"\n" + hint[0] + "\n"), "")
      << error;

  // [experiment] reference must be a string ..., e.g. reference = "<key>=<value>"
  error = ErrorOf("[experiment]\nreference = 3\n");
  hint = Suggested(error, R"re(e\.g\. reference = "([^"=]+)=([^"]+)")re");
  ASSERT_EQ(hint.size(), 2u) << error;
  EXPECT_EQ(ValidatedPlanError(kData + "[experiment]\nreference = \"" + hint[0] + "=" + hint[1] +
                               "\"\n[matrix]\n\"" + hint[0] + "\" = [\"" + hint[1] + "\"]\n"),
            "")
      << error;
}

// A callback's parameter varied through its list entry, by index or by plugin: valid runs.
TEST(ExperimentPlanTest, AListEntryVariedByIndexOrPluginGivesValidCells) {
  const std::string callbacks =
      kData + "[[strategies.callbacks]]\nplugin = \"empty_cache\"\nevery = 10\n";
  for (const char* key :
       {"strategies.callbacks.0.every", "strategies.callbacks.empty_cache.every"}) {
    ExperimentPlan plan;
    ASSERT_NO_THROW(plan = ParseExperimentPlan(
                        callbacks + "[matrix]\n\"" + key + "\" = [1, 2]\n", kSource, {},
                        ValidateCellAsRun))
        << key;
    ASSERT_EQ(plan.cells.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const config::RunConfig cfg =
          config::RunConfigFromTable(plan.cells[i].document, plan.cells[i].source);
      const auto callback = std::find_if(cfg.strategies.begin(), cfg.strategies.end(),
                                         [](const auto& s) { return s.slot == "callbacks"; });
      ASSERT_NE(callback, cfg.strategies.end());
      EXPECT_EQ(callback->plugin, "empty_cache");
      EXPECT_EQ(callback->params.Int("every"), static_cast<int64_t>(i + 1));
    }
  }
  EXPECT_EQ(ValidatedPlanError(callbacks, {"strategies.callbacks.empty_cache.every=3"}), "");
}

TEST(ExperimentPlanTest, AMissingFileIsAConfigError) {
  EXPECT_THROW(LoadExperimentPlan(SourcePath("experiments/nope.toml")), config::ConfigError);
}

}  // namespace
}  // namespace memsweep::experiment
