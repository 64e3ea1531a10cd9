// Answers that must not be silently wrong, through the commands a user runs: rows well short of
// seq_len, the device a named GPU stands for, a matrix over cards one of which cannot hold the
// parameters, a CUDA file planned without a GPU, and what the estimate's table says of a cell.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/env/cuda_probe.h"
#include "core/memory/byte_size.h"
#include "core/model/llama_config.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace {

namespace fs = std::filesystem;
using memsweep::testing_support::FreshTempDir;
using memsweep::testing_support::Outcome;
using memsweep::testing_support::RunMemsweep;
using memsweep::testing_support::SourcePath;

// A CSV's header names and rows (fields split at commas outside quotes; quoted fields whole).
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string At(size_t row, const std::string& column) const {
    for (size_t c = 0; c < header.size(); ++c) {
      if (header[c] == column) return c < rows.at(row).size() ? rows.at(row)[c] : "";
    }
    ADD_FAILURE() << "no column " << column;
    return "";
  }
};

Csv ParseCsv(const std::string& text) {
  Csv csv;
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false, first = true;
  const auto end_row = [&] {
    fields.push_back(field);
    field.clear();
    if (first) {
      csv.header = fields;
      first = false;
    } else {
      csv.rows.push_back(fields);
    }
    fields.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
    } else if (c == '\r') {
    } else if (c == '\n') {
      end_row();
    } else {
      field += c;
    }
  }
  return csv;
}

const std::string kQuickstart = SourcePath("experiments/quickstart.toml");

// The quickstart at seq_len 1024: the bundled dictionary's entries are a few hundred bytes, so
// with padding = "longest" every micro-batch is far shorter than a row.
const std::string kLongRows = " --set experiment.steps=2 --set strategies.batching.seq_len=1024";

TEST(HonestAnswersTest, RowsWellShortOfSeqLenAreSaidByEstimateAndPlan) {
  const Outcome csv = RunMemsweep("estimate " + kQuickstart + kLongRows + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  const Csv e = ParseCsv(csv.output);
  ASSERT_EQ(e.rows.size(), 4u) << csv.output;
  for (size_t r = 0; r < e.rows.size(); ++r) {
    EXPECT_EQ(e.At(r, "seq_len"), "1024");
    // An oom in the first step trained no row: its verdict needs no warning (shorter rows than
    // a full row's would only fit better).
    if (e.At(r, "status") == "oom") continue;
    const double mean = std::stod(e.At(r, "row_length_mean"));
    const long long longest = std::stoll(e.At(r, "row_length_max"));
    EXPECT_GT(mean, 0);
    EXPECT_LT(mean, 0.9 * 1024) << "row " << r;
    EXPECT_LE(mean, longest);
    EXPECT_LE(longest, 1024);
    EXPECT_NE(e.At(r, "warnings").find("short rows: the rows trained are"), std::string::npos)
        << e.At(r, "warnings");
    EXPECT_NE(e.At(r, "warnings").find("padding = \"max_length\""), std::string::npos);
  }
  const Outcome table = RunMemsweep("estimate " + kQuickstart + kLongRows, "COLUMNS=1000");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("  warning: short rows:"), std::string::npos) << table.output;
  const Outcome plan = RunMemsweep("plan " + kQuickstart + kLongRows, "COLUMNS=1000");
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("cell 0: short rows: the rows trained are"), std::string::npos)
      << plan.output;
  // The plan reads the same rows the estimate's run trains.
  std::ostringstream mean;
  mean.precision(0);
  mean << std::fixed << std::stod(e.At(0, "row_length_mean"));
  EXPECT_NE(plan.output.find("cell 0: short rows: the rows trained are " + mean.str() +
                             " positions long on average (longest " + e.At(0, "row_length_max") +
                             ") against seq_len = 1024"),
            std::string::npos)
      << plan.output;
}

TEST(HonestAnswersTest, FullRowsAreNotShort) {
  for (const char* full : {" --set 'strategies.packing.plugin=\"concat\"'",
                           " --set 'strategies.batching.padding=\"max_length\"'"}) {
    const Outcome csv = RunMemsweep("estimate " + kQuickstart + kLongRows + full + " --format csv");
    ASSERT_EQ(csv.exit_code, 0) << csv.output;
    const Csv e = ParseCsv(csv.output);
    ASSERT_EQ(e.rows.size(), 4u) << csv.output;
    for (size_t r = 0; r < e.rows.size(); ++r) {
      if (e.At(r, "status") == "oom") continue;  // no step completed: no rows to measure
      EXPECT_EQ(e.At(r, "row_length_max"), "1024") << full;
      EXPECT_EQ(e.At(r, "warnings"), "") << full;
    }
    const Outcome plan = RunMemsweep("plan " + kQuickstart + kLongRows + full, "COLUMNS=1000");
    ASSERT_EQ(plan.exit_code, 0) << plan.output;
    EXPECT_EQ(plan.output.find("short rows"), std::string::npos) << plan.output;
  }
}

// A run records the rows it trained (run_metrics) and its summary file says they were short.
TEST(HonestAnswersTest, ARunRecordsItsRowsAndSaysTheyWereShort) {
  const fs::path dir = FreshTempDir("short_rows_run");
  const std::string db = (dir / "r.db").string();
  const Outcome run = RunMemsweep("run " + kQuickstart + kLongRows +
                                  " --set 'matrix.strategies.batching.micro_batch_size=[2]'"
                                  " --set 'matrix.device.memory_budget=[\"64MiB\"]' --db " + db);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("short rows: the rows trained are"), std::string::npos) << run.output;
  const Outcome q = RunMemsweep("query --db " + db +
                                " --format csv \"SELECT m.row_length_mean, m.row_length_max, "
                                "m.tokens_per_row FROM run_metrics m\"");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  const Csv m = ParseCsv(q.output);
  ASSERT_EQ(m.rows.size(), 1u) << q.output;
  const double mean = std::stod(m.At(0, "row_length_mean"));
  EXPECT_GT(mean, 0);
  EXPECT_LT(mean, 0.9 * 1024);
  EXPECT_LE(std::stod(m.At(0, "tokens_per_row")), mean);  // padding is not a real token
  bool summary_says = false;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".txt") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    summary_says = summary_says || (text.find("rows trained") != std::string::npos &&
                                    text.find("warning: short rows") != std::string::npos);
  }
  EXPECT_TRUE(summary_says);
  // The report says it under its cells table.
  const std::string page = (dir / "report.html").string();
  const Outcome report = RunMemsweep("report --db " + db + " -o " + page);
  ASSERT_EQ(report.exit_code, 0) << report.output;
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("Short rows"), std::string::npos);
  EXPECT_NE(html.find("short rows: the rows trained are"), std::string::npos);
  EXPECT_NE(html.find("against seq_len = 1024"), std::string::npos);
}

// --device naming a GPU of the catalog estimates the card itself: a cell that leaves the type
// out (or says "auto") becomes a CUDA cell; one that says type = "cpu" stays the CPU's
// simulation, with a warning beside its verdict. A capacity keeps each cell's own device.
TEST(HonestAnswersTest, ANamedGpuMakesTheCellACudaCellUnlessTheFileSaysCpu) {
  const std::string one_step = " --set experiment.steps=1 --format csv";
  const Outcome auto_cell = RunMemsweep("estimate " + kQuickstart + one_step +
                                        " --set 'device.type=\"auto\"' --device rtx4090");
  ASSERT_EQ(auto_cell.exit_code, 0) << auto_cell.output;
  const Csv a = ParseCsv(auto_cell.output);
  ASSERT_EQ(a.rows.size(), 4u);
  EXPECT_EQ(a.At(0, "target"), "cuda");
  EXPECT_EQ(a.At(0, "device"), "rtx4090");
  EXPECT_EQ(a.At(0, "warnings").find("the file says"), std::string::npos) << a.At(0, "warnings");

  const Outcome cpu_cell = RunMemsweep("estimate " + kQuickstart + one_step + " --device rtx4090");
  ASSERT_EQ(cpu_cell.exit_code, 0) << cpu_cell.output;
  const Csv c = ParseCsv(cpu_cell.output);
  EXPECT_EQ(c.At(0, "target"), "cpu");
  EXPECT_NE(c.At(0, "warnings").find("the file says [device] type = \"cpu\": estimated as the "
                                     "CPU's simulation of the rtx4090's size"),
            std::string::npos)
      << cpu_cell.output;
  // The CUDA cell reserves in the caching allocator's blocks, with cuBLAS workspaces: more.
  EXPECT_GT(std::stoll(a.At(0, "peak_reserved_bytes")), std::stoll(c.At(0, "peak_reserved_bytes")));
  const Outcome table = RunMemsweep("estimate " + kQuickstart + " --set experiment.steps=1 "
                                    "--device rtx4090", "COLUMNS=1000");
  EXPECT_NE(table.output.find("  warning: the file says [device] type = \"cpu\""),
            std::string::npos)
      << table.output;

  const Outcome size = RunMemsweep("estimate " + kQuickstart + one_step +
                                   " --set 'device.type=\"auto\"' --device 24GiB");
  ASSERT_EQ(size.exit_code, 0) << size.output;
  const Csv s = ParseCsv(size.output);
  EXPECT_EQ(s.At(0, "target"), memsweep::env::ProbeCuda().usable() ? "cuda" : "cpu");
  EXPECT_EQ(s.At(0, "warnings").find("the file says"), std::string::npos) << s.At(0, "warnings");
}

// A matrix over cards in which one card cannot hold the model's fp32 parameters: that cell is
// an oom with its reason, the others go on — in plan, estimate and run (no worker started).
const std::string kOverCards =
    " --set experiment.steps=2"
    " --set 'matrix.strategies.batching.micro_batch_size=[2]'"
    " --set 'matrix.device.memory_budget=[\"100KiB\", \"64MiB\"]'";

TEST(HonestAnswersTest, ACardThatCannotHoldTheParametersIsAnOomNotBadInput) {
  const Outcome plan = RunMemsweep("plan " + kQuickstart + kOverCards, "COLUMNS=1000");
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("cell 0: oom: out of memory before the first step: the model's fp32 "
                             "parameters alone need"),
            std::string::npos)
      << plan.output;
  EXPECT_EQ(plan.output.find("cell 1: oom"), std::string::npos) << plan.output;

  const Outcome csv = RunMemsweep("estimate " + kQuickstart + kOverCards + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  const Csv e = ParseCsv(csv.output);
  ASSERT_EQ(e.rows.size(), 2u) << csv.output;
  EXPECT_EQ(e.At(0, "status"), "oom");
  EXPECT_EQ(e.At(0, "oom_before_run"), "true");
  const long long params = memsweep::model::LlamaPreset("tiny")->ParameterCount();
  EXPECT_NE(e.At(0, "message").find("parameters alone need " +
                                    memsweep::memory::FormatBytes(params * 4) + " of 100.00 KiB"),
            std::string::npos)
      << e.At(0, "message");
  EXPECT_EQ(e.At(0, "peak_allocated_bytes"), "");  // nothing ran: no figures
  EXPECT_EQ(e.At(1, "status"), "fits");

  const fs::path dir = FreshTempDir("over_cards");
  const std::string db = (dir / "r.db").string();
  const Outcome run = RunMemsweep("run " + kQuickstart + kOverCards + " --db " + db);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Outcome q = RunMemsweep("query --db " + db + " --format csv \"SELECT cell_index, status, "
                                "error FROM runs ORDER BY cell_index\"");
  const Csv r = ParseCsv(q.output);
  ASSERT_EQ(r.rows.size(), 2u) << q.output;
  EXPECT_EQ(r.At(0, "status"), "oom");
  EXPECT_NE(r.At(0, "error").find("parameters alone need"), std::string::npos);
  EXPECT_EQ(r.At(1, "status"), "ok");
  // No worker ran cell 0: it left no result beside the database, cell 1 did.
  bool cell0_result = false, cell1_result = false;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    cell0_result = cell0_result || (name.rfind("cell0-", 0) == 0 && entry.path().extension() == ".json");
    cell1_result = cell1_result || (name.rfind("cell1-", 0) == 0 && entry.path().extension() == ".json");
  }
  EXPECT_FALSE(cell0_result);
  EXPECT_TRUE(cell1_result);
}

// Planning needs no GPU: a type = "cuda" file is planned on a machine without one (exit 0), and
// the plan says the cells need a GPU to run. (Where a GPU is usable the cells simply plan.)
TEST(HonestAnswersTest, ACudaFileIsPlannedWithoutAGpu) {
  const Outcome plan =
      RunMemsweep("plan " + kQuickstart + " --set 'device.type=\"cuda\"'", "COLUMNS=1000");
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  if (memsweep::env::ProbeCuda().usable()) {
    EXPECT_EQ(plan.output.find("needs a GPU"), std::string::npos) << plan.output;
    return;
  }
  EXPECT_NE(plan.output.find("cell 0: needs a GPU to run ([device] type = \"cuda\"; here "),
            std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("`memsweep estimate " + kQuickstart + "` estimates it"),
            std::string::npos)
      << plan.output;
  // Running it here is still refused, before anything runs.
  const fs::path dir = FreshTempDir("cuda_plan");
  const Outcome run = RunMemsweep("run " + kQuickstart + " --set 'device.type=\"cuda\"' --db " +
                                  (dir / "r.db").string());
  EXPECT_EQ(run.exit_code, 2) << run.output;
}

// The estimate's table names the model's and the trainable parameters and the tokens of a
// micro-batch and of an optimizer step; --columns chooses, --wide shows every column.
TEST(HonestAnswersTest, TheEstimateSaysParametersAndTokensAndFitsTheTerminal) {
  const std::string one_step = "estimate " + kQuickstart + " --set experiment.steps=1 " +
                               "--set strategies.batching.accumulation_steps=3";
  const Outcome csv = RunMemsweep(one_step + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  const Csv e = ParseCsv(csv.output);
  const long long params = memsweep::model::LlamaPreset("tiny")->ParameterCount();
  for (size_t r = 0; r < 4; ++r) {
    const long long micro_batch = r < 2 ? 2 : 8;  // the matrix: [2, 8] x two budgets
    EXPECT_EQ(e.At(r, "parameters"), std::to_string(params));
    EXPECT_EQ(e.At(r, "trainable_params"), std::to_string(params));
    EXPECT_EQ(e.At(r, "tokens_per_micro_batch"), std::to_string(micro_batch * 256));
    EXPECT_EQ(e.At(r, "tokens_per_step"), std::to_string(micro_batch * 256 * 3));
  }
  const Outcome chosen =
      RunMemsweep(one_step + " --columns cell,parameters,tokens/micro_batch,tokens/step", "COLUMNS=200");
  ASSERT_EQ(chosen.exit_code, 0) << chosen.output;
  std::istringstream lines(chosen.output);
  std::string header, rule, row;
  while (std::getline(lines, header) && header.rfind("cell", 0) != 0) {
  }
  std::getline(lines, rule);
  std::getline(lines, row);
  EXPECT_NE(header.find("parameters"), std::string::npos) << chosen.output;
  EXPECT_EQ(header.find("status"), std::string::npos) << chosen.output;
  std::string grouped = std::to_string(params);
  for (int at = static_cast<int>(grouped.size()) - 3; at > 0; at -= 3) grouped.insert(at, ",");
  EXPECT_NE(row.find(grouped), std::string::npos) << chosen.output;
  EXPECT_NE(row.find("512"), std::string::npos) << chosen.output;
  EXPECT_NE(row.find("1,536"), std::string::npos) << chosen.output;
  // A terminal of 100 columns: every line fits, the columns left out are named.
  const Outcome fitted = RunMemsweep(one_step, "COLUMNS=100");
  ASSERT_EQ(fitted.exit_code, 0) << fitted.output;
  std::istringstream fitted_lines(fitted.output);
  for (std::string line; std::getline(fitted_lines, line);) {
    if (line.rfind("cell ", 0) == 0 || line.rfind("  ", 0) == 0) continue;  // the notes below
    EXPECT_LE(line.size(), 100u) << line;
  }
  EXPECT_NE(fitted.output.find("--wide shows every column"), std::string::npos) << fitted.output;
  const Outcome wide = RunMemsweep(one_step + " --wide", "COLUMNS=100");
  ASSERT_EQ(wide.exit_code, 0) << wide.output;
  EXPECT_NE(wide.output.find("largest_allocation"), std::string::npos) << wide.output;
  const Outcome bad = RunMemsweep(one_step + " --columns cell,nope");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("nope"), std::string::npos) << bad.output;
}

// An oom in the first step shows the model state held at the failing request: parameters (the
// same bytes as a cell that fits), not everything under activations.
TEST(HonestAnswersTest, AnOomInTheFirstStepShowsTheModelStateItHeld) {
  const Outcome csv = RunMemsweep("estimate " + kQuickstart + " --set experiment.steps=1 --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  const Csv e = ParseCsv(csv.output);
  ASSERT_EQ(e.At(2, "status"), "oom") << csv.output;  // 8 rows in 24 MiB
  ASSERT_EQ(e.At(3, "status"), "fits") << csv.output;
  const long long params = memsweep::model::LlamaPreset("tiny")->ParameterCount();
  EXPECT_EQ(e.At(2, "params_bytes"), std::to_string(params * 4));
  EXPECT_EQ(e.At(2, "params_bytes"), e.At(3, "params_bytes"));
  const long long peak = std::stoll(e.At(2, "peak_allocated_bytes"));
  const long long held = std::stoll(e.At(2, "params_bytes")) + std::stoll(e.At(2, "grads_bytes")) +
                         std::stoll(e.At(2, "optimizer_bytes"));
  EXPECT_EQ(std::stoll(e.At(2, "activations_bytes")), peak - held);
}

}  // namespace
