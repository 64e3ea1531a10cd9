// The catalogue of bad inputs (docs/cli.md, "Bad input"): one row per way a user can hand
// memsweep something it cannot use. Each row writes its files into a fresh folder, runs the
// memsweep binary as a user would, and checks the exit code (2: invalid input), that the message
// names the problem (file:line:column where the input has one) and what to do, and that nothing
// was written: no results database created or changed, no temporary file left in the folder.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/results/sqlite_handles.h"
#include "support/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using memsweep::testing_support::FreshTempDir;
using memsweep::testing_support::Outcome;
using memsweep::testing_support::RunMemsweep;

// The experiment every row starts from: valid, tiny, its data beside it. Line numbers matter:
// rows replace or append lines and expect messages that name them.
constexpr const char* kExperiment =
    "[experiment]\n"            // 1
    "name = \"bad-input\"\n"    // 2
    "steps = 1\n"               // 3
    "[model]\n"                 // 4
    "preset = \"tiny\"\n"       // 5
    "[data]\n"                  // 6
    "path = \"data.jsonl\"\n"   // 7
    "[device]\n"                // 8
    "threads = 1\n"             // 9
    "[strategies.batching]\n"   // 10
    "seq_len = 32\n"            // 11
    "micro_batch_size = 2\n";   // 12

constexpr const char* kData =
    "{\"text\": \"The first document.\"}\n"
    "{\"text\": \"The second document.\"}\n"
    "{\"text\": \"The third document.\"}\n";

// kExperiment with `from` replaced by `to` (which must be there), then `appended`.
std::string Experiment(const std::string& from = "", const std::string& to = "",
                       const std::string& appended = "") {
  std::string text = kExperiment;
  if (!from.empty()) {
    const size_t at = text.find(from);
    if (at == std::string::npos) ADD_FAILURE() << "not in the experiment: " << from;
    text.replace(at, from.size(), to);
  }
  return text + appended;
}

// A safetensors file from its header's JSON and its data bytes (the header padded to 8 bytes).
std::string Safetensors(std::string header, const std::string& data) {
  while (header.size() % 8 != 0) header += ' ';
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + data;
}

// A SQLite database whose user_version is `version` (memsweep's schema versions count up from 1).
void WriteDatabaseWithVersion(const fs::path& path, int version) {
  using memsweep::results::SqliteConnection;
  SqliteConnection db(path.string(), SqliteConnection::Access::kReadWriteCreate);
  db.Execute("CREATE TABLE notes (x)");
  db.Execute("PRAGMA user_version = " + std::to_string(version));
}

enum class Needs { kNothing, kNotRoot };

struct BadInput {
  std::string name;   // the test's name: Class_What
  // Files to write, path relative to the folder -> content; "{dir}" in either becomes the folder.
  std::map<std::string, std::string> files;
  std::string command;  // memsweep's arguments; "{dir}" and "{fixtures}" are filled in
  std::string message;  // must appear in the output; "{dir}" is filled in
  int exit_code = 2;
  std::string env;                                 // "NAME=value" before the command
  std::function<void(const fs::path& dir)> setup;  // what files cannot say (modes, SQLite)
  Needs needs = Needs::kNothing;
};

// gtest prints a row by its name, not its bytes.
void PrintTo(const BadInput& input, std::ostream* out) { *out << input.name; }

std::string Fill(std::string text, const fs::path& dir) {
  const std::map<std::string, std::string> values = {{"{dir}", dir.string()},
                                                      {"{fixtures}", MEMSWEEP_FIXTURE_DIR}};
  for (const auto& [name, value] : values) {
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at)) {
      text.replace(at, name.size(), value);
      at += value.size();
    }
  }
  return text;
}

// Every file under `dir` with its bytes (a changed or new database, a left-over temporary file).
std::map<std::string, std::string> Contents(const fs::path& dir) {
  std::map<std::string, std::string> contents;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(entry.path(), dir).string();
    if (!entry.is_regular_file()) {
      contents[name] = "(not a file)";
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    contents[name] = in ? bytes.str() : "(unreadable)";
  }
  return contents;
}

const std::string kRun = "run {dir}/e.toml --db {dir}/r.db";
const std::string kPlan = "plan {dir}/e.toml";

std::vector<BadInput> ExperimentFiles() {
  return {
      {.name = "Toml_UnterminatedString",
       .files = {{"e.toml", Experiment("name = \"bad-input\"", "name = \"bad-input")}},
       .command = kRun,
       .message = "{dir}/e.toml:2:18: TOML syntax error"},
      {.name = "Toml_MissingBracket",
       .files = {{"e.toml", Experiment("[data]", "[data")}},
       .command = kRun,
       .message = "{dir}/e.toml:6:6: TOML syntax error"},
      {.name = "Toml_DuplicateKey",
       .files = {{"e.toml", Experiment("steps = 1\n", "steps = 1\nsteps = 2\n")}},
       .command = kRun,
       .message = "{dir}/e.toml:4:9: TOML syntax error"},
      {.name = "Toml_UnknownKey",
       .files = {{"e.toml", Experiment("preset = \"tiny\"", "preset = \"tiny\"\nhiden_size = 64")}},
       .command = kRun,
       .message = "{dir}/e.toml:6:1: unknown key 'hiden_size' in [model]; allowed keys: "},
      {.name = "Toml_UnknownSection",
       .files = {{"e.toml", Experiment("", "", "[optimiser]\nlr = 1e-3\n")}},
       .command = kRun,
       .message = "{dir}/e.toml:13:2: unknown section [optimiser]; allowed sections: "},
      {.name = "Toml_WrongType",
       .files = {{"e.toml", Experiment("steps = 1", "steps = \"one\"")}},
       .command = kRun,
       .message = "{dir}/e.toml:3:9: [experiment] steps must be an integer"},
      {.name = "Toml_NegativeSteps",
       .files = {{"e.toml", Experiment("steps = 1", "steps = -1")}},
       .command = kRun,
       .message = "{dir}/e.toml:3:9: [experiment] steps must be at least 1"},
      {.name = "Toml_LearningRateNotPositive",
       .files = {{"e.toml", Experiment("", "", "[optimizer]\nlr = 0.0\n")}},
       .command = kRun,
       .message = "{dir}/e.toml:14:"},
      {.name = "Toml_BetaOutOfRange",
       .files = {{"e.toml", Experiment("", "", "[optimizer]\nbeta1 = 1.5\n")}},
       .command = kRun,
       .message = "{dir}/e.toml:14:"},
      {.name = "Toml_UnknownPreset",
       .files = {{"e.toml", Experiment("preset = \"tiny\"", "preset = \"huge\"")}},
       .command = kRun,
       .message = "{dir}/e.toml:5:"},
      {.name = "Toml_SeqLenPastPositions",
       .files = {{"e.toml", Experiment("seq_len = 32", "seq_len = 100000")}},
       .command = kRun,
       .message = "max_position_embeddings"},
      {.name = "Toml_UnknownPlugin",
       .files = {{"e.toml", Experiment("", "", "[strategies.attention]\nplugin = \"nope\"\n")}},
       .command = kRun,
       .message = "{dir}/e.toml:14:"},
      {.name = "Toml_UnknownPluginParameter",
       .files = {{"e.toml", Experiment("seq_len = 32", "seq_len = 32\nseq_length = 32")}},
       .command = kRun,
       .message = "{dir}/e.toml:12:"},
      {.name = "Toml_PluginParameterWrongType",
       .files = {{"e.toml", Experiment("micro_batch_size = 2", "micro_batch_size = \"two\"")}},
       .command = kRun,
       .message = "{dir}/e.toml:12:"},
      {.name = "Toml_PresetAndConfig",
       .files = {{"e.toml", Experiment("preset = \"tiny\"", "preset = \"tiny\"\nconfig = \"c\"")},
                 {"c/config.json", "{}"}},
       .command = kRun,
       .message = "give either preset or config, not both"},
      {.name = "Toml_StrategyRefusesDevice",
       .files = {{"e.toml", Experiment("", "", "[strategies.precision]\nplugin = \"fp16\"\n")}},
       .command = kRun,
       .message = "plugin = \"fp16\" cannot run on the CPU device ([device] type = \"cpu\"): "
                  "fp16 autocast with loss scaling is for CUDA devices; on the CPU use plugin = "
                  "\"bf16-autocast\""},
      {.name = "Toml_ConflictingStrategies",
       .files = {{"e.toml", Experiment("", "",
                                       "[strategies.adapter]\nplugin = \"lora\"\n"
                                       "[strategies.sharding]\nplugin = \"zero3\"\n")}},
       .command = kRun,
       .message = "{dir}/e.toml:15:1: [strategies.sharding] plugin = \"zero3\" cannot leave a "
                  "frozen base alone, and [strategies.adapter] plugin = \"lora\" freezes the "
                  "model's parameters: use sharding \"zero2\""},
      {.name = "Toml_UnknownMatrixKey",
       .files = {{"e.toml", Experiment("", "", "[matrix]\n\"model.hiden_size\" = [64, 128]\n")}},
       .command = kRun,
       .message = "{dir}/e.toml:14:"},
      {.name = "Toml_MatrixValueOneCellRefuses",
       .files = {{"e.toml",
                  Experiment("", "", "[matrix]\n\"strategies.batching.seq_len\" = [32, 0]\n")}},
       .command = kRun,
       .message = "cell 1"},
      {.name = "Toml_FileMissing",
       .command = kRun,
       .message = "{dir}/e.toml: cannot open the experiment file; check the path"},
      {.name = "Toml_FileIsADirectory",
       .files = {{"e.toml/x", ""}},
       .command = kRun,
       .message = "{dir}/e.toml: is a directory, not an experiment file"},
      {.name = "Device_EmulateUnknownGpu",
       .files = {{"e.toml", Experiment("threads = 1", "threads = 1\nemulate = \"rtx9999\"")}},
       .command = kRun,
       .message = "{dir}/e.toml:10:"},
      {.name = "Device_EmulateBadSize",
       .files = {{"e.toml", Experiment("threads = 1", "threads = 1\nemulate = \"12 parsecs\"")}},
       .command = kRun,
       .message = "{dir}/e.toml:10:"},
      {.name = "Device_EmulateContextBadSize",
       .files = {{"e.toml", Experiment("threads = 1",
                                       "threads = 1\nemulate = \"a10g\"\nemulate_context = -3")}},
       .command = kRun,
       .message = "{dir}/e.toml:11:"},
      {.name = "Device_BudgetBadSize",
       .files = {{"e.toml", Experiment("threads = 1", "threads = 1\nmemory_budget = \"lots\"")}},
       .command = kRun,
       .message = "{dir}/e.toml:10:"},
      {.name = "Device_UnknownType",
       .files = {{"e.toml", Experiment("threads = 1", "threads = 1\ntype = \"tpu\"")}},
       .command = kRun,
       .message = "{dir}/e.toml:10:"},
  };
}

std::vector<BadInput> Overrides() {
  return {
      {.name = "Set_NoEquals",
       .files = {{"e.toml", Experiment()}},
       .command = kRun + " --set experiment.steps",
       .message = "--set experiment.steps: expected section.key=value"},
      {.name = "Set_UnknownKey",
       .files = {{"e.toml", Experiment()}},
       .command = kRun + " --set model.hiden_size=64",
       .message = "hiden_size"},
      {.name = "Set_WrongType",
       .files = {{"e.toml", Experiment()}},
       .command = kRun + " --set experiment.steps=many",
       .message = "steps"},
      {.name = "Set_OutOfRange",
       .files = {{"e.toml", Experiment()}},
       .command = kPlan + " --set optimizer.lr=-1",
       .message = "lr"},
  };
}

std::vector<BadInput> DataFiles() {
  return {
      {.name = "Data_MalformedJsonlLine",
       .files = {{"e.toml", Experiment()},
                 {"data.jsonl", "{\"text\": \"fine\"}\n{\"text\": \"broken\n{\"text\": \"x\"}\n"}},
       .command = kRun,
       .message = "{dir}/data.jsonl:2: invalid JSON"},
      {.name = "Data_MalformedJsonlLineInPlan",
       .files = {{"e.toml", Experiment()},
                 {"data.jsonl", "{\"text\": \"fine\"}\n\n[1, 2]\n"}},
       .command = kPlan,
       .message = "{dir}/data.jsonl:3: expected a JSON object, found array"},
      {.name = "Data_MissingTextField",
       .files = {{"e.toml", Experiment()}, {"data.jsonl", "{\"body\": \"no text\"}\n"}},
       .command = kRun,
       .message = "{dir}/data.jsonl:1: missing field \"text\""},
      {.name = "Data_TextFieldNotAString",
       .files = {{"e.toml", Experiment()}, {"data.jsonl", "{\"text\": 7}\n"}},
       .command = kRun,
       .message = "{dir}/data.jsonl:1: field \"text\" is number, not a string"},
      {.name = "Data_CompletionWithoutPrompt",
       .files = {{"e.toml", Experiment("path = \"data.jsonl\"",
                                       "path = \"data.jsonl\"\ntrain_on = \"completion\"")},
                 {"data.jsonl", "{\"text\": \"no prompt\"}\n"}},
       .command = kRun,
       .message = "{dir}/data.jsonl:1: no string fields \"prompt\" and \"completion\""},
      {.name = "Data_EmptyFile",
       .files = {{"e.toml", Experiment()}, {"data.jsonl", ""}},
       .command = kRun,
       .message = "{dir}/data.jsonl: no documents found: check [data] path and [data] format"},
      {.name = "Data_BlankLinesOnly",
       .files = {{"e.toml", Experiment("path = \"data.jsonl\"",
                                       "path = \"data.txt\"\nformat = \"text\"")},
                 {"data.txt", "\n  \n\n"}},
       .command = kPlan,
       .message = "{dir}/data.txt: no documents found"},
      {.name = "Data_MissingFile",
       .files = {{"e.toml", Experiment()}},
       .command = kRun,
       .message = "{dir}/e.toml:7:"},
      {.name = "Data_Directory",
       .files = {{"e.toml", Experiment()}, {"data.jsonl/x", ""}},
       .command = kRun,
       .message = "{dir}/data.jsonl: is a directory, not a file: check [data] path"},
      {.name = "Data_Unreadable",
       .files = {{"e.toml", Experiment()}, {"data.jsonl", kData}},
       .command = kRun,
       .message = "{dir}/data.jsonl: cannot open file for reading: check its permissions",
       .setup = [](const fs::path& dir) { chmod((dir / "data.jsonl").c_str(), 0); },
       .needs = Needs::kNotRoot},
      {.name = "Data_TokenFileOddSize",
       .files = {{"e.toml", Experiment("path = \"data.jsonl\"",
                                       "path = \"t.bin\"\nformat = \"tokens\"")},
                 {"t.bin", "abc"}},
       .command = kRun,
       .message = "{dir}/t.bin: size 3 bytes is not a multiple of 2"},
      {.name = "Data_TokenIdPastVocabulary",
       .files = {{"e.toml", Experiment("path = \"data.jsonl\"",
                                       "path = \"t.bin\"\nformat = \"tokens\"")},
                 {"t.bin", std::string("\xff\xff\x01\x00", 4)}},
       .command = kRun,
       .message = "holds token id 65535"},
  };
}

std::vector<BadInput> Plugins() {
  const std::string paths = "[plugins]\npaths = [\"";
  return {
      {.name = "Plugin_WrongAbi",
       .files = {{"e.toml", Experiment("", "", paths + "{fixtures}/fixture_wrong_abi.so\"]\n")}},
       .command = kRun,
       .message = "fixture_wrong_abi.so: incompatible plugin:\n    ABI version: expected "},
      {.name = "Plugin_WrongFingerprint",
       .files = {{"e.toml",
                  Experiment("", "", paths + "{fixtures}/fixture_wrong_fingerprint.so\"]\n")}},
       .command = kRun,
       .message = "fixture_wrong_fingerprint.so"},
      {.name = "Plugin_NoEntryPoint",
       .files = {{"e.toml", Experiment("", "", paths + "{fixtures}/fixture_no_entry.so\"]\n")}},
       .command = kRun,
       .message = "fixture_no_entry.so"},
      {.name = "Plugin_NotALibrary",
       .files = {{"e.toml", Experiment("", "", paths + "{dir}/notes.so\"]\n")},
                 {"notes.so", "not a shared library\n"}},
       .command = kRun,
       .message = "{dir}/notes.so"},
      {.name = "Plugin_ThrowingRegister",
       .files = {{"e.toml",
                  Experiment("", "", paths + "{fixtures}/fixture_throwing_register.so\"]\n")}},
       .command = kRun,
       .message = "fixture_throwing_register.so"},
      {.name = "Plugin_MissingLibrary",
       .files = {{"e.toml", Experiment("", "", paths + "{dir}/gone.so\"]\n")}},
       .command = kRun,
       .message = "{dir}/gone.so"},
      {.name = "Plugin_WrongAbiOnPluginPath",
       .files = {{"e.toml", Experiment()}},
       .command = kRun,
       .message = "MEMSWEEP_PLUGIN_PATH names libraries that failed to load",
       .env = "MEMSWEEP_PLUGIN_PATH={fixtures}/fixture_wrong_abi.so"},
  };
}

constexpr const char* kConfigLine = "config = \"model\"";

std::vector<BadInput> ModelFiles() {
  const std::string good_config =
      "{\"model_type\": \"llama\", \"vocab_size\": 512, \"hidden_size\": 64, "
      "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4}";
  const std::string weights_line = "preset = \"tiny\"\nweights = \"w.safetensors\"";
  const auto weights = [&](const std::string& bytes) {
    return std::map<std::string, std::string>{
        {"e.toml", Experiment("preset = \"tiny\"", weights_line)},
        {"data.jsonl", kData},
        {"w.safetensors", bytes}};
  };
  const std::string f32 = "{\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": ";
  return {
      {.name = "ModelConfig_MalformedJson",
       .files = {{"e.toml", Experiment("preset = \"tiny\"", kConfigLine)},
                 {"model/config.json", "{\"model_type\": \"llama\",\n"}},
       .command = kRun,
       .message = "{dir}/e.toml:5:"},
      {.name = "ModelConfig_MissingKey",
       .files = {{"e.toml", Experiment("preset = \"tiny\"", kConfigLine)},
                 {"model/config.json", "{\"model_type\": \"llama\", \"vocab_size\": 512}"}},
       .command = kRun,
       .message = "\"hidden_size\" is missing"},
      {.name = "ModelConfig_WrongType",
       .files = {{"e.toml", Experiment("preset = \"tiny\"", kConfigLine)},
                 {"model/config.json",
                  good_config.substr(0, good_config.size() - 1) + ", \"rope_theta\": \"big\"}"}},
       .command = kRun,
       .message = "\"rope_theta\" must be a number"},
      {.name = "ModelConfig_UnsupportedType",
       .files = {{"e.toml", Experiment("preset = \"tiny\"", kConfigLine)},
                 {"model/config.json", "{\"model_type\": \"gpt2\"}"}},
       .command = kRun,
       .message = "model_type \"gpt2\" is not supported"},
      {.name = "ModelConfig_DirectoryWithoutConfig",
       .files = {{"e.toml", Experiment("preset = \"tiny\"", kConfigLine)}, {"model/x", ""}},
       .command = kRun,
       .message = "the directory has no config.json"},
      {.name = "Safetensors_Truncated",
       .files = weights("\x10\x00\x00"),
       .command = kRun,
       .message = "too short to be a safetensors file"},
      {.name = "Safetensors_HeaderPastTheEnd",
       .files = weights(std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10)),
       .command = kRun,
       .message = "runs past the end of the file"},
      {.name = "Safetensors_HeaderNotJson",
       .files = weights(Safetensors("{\"a\": ", "")),
       .command = kRun,
       .message = "the header is not valid JSON"},
      {.name = "Safetensors_OffsetsPastTheData",
       .files = weights(Safetensors("{\"a\": " + f32 + "[0, 8]}}", std::string(4, '\0'))),
       .command = kRun,
       .message = "is past the data (4 bytes): the file is truncated"},
      {.name = "Safetensors_OverlappingTensors",
       .files = weights(Safetensors("{\"a\": " + f32 + "[0, 8]}, \"b\": " + f32 + "[4, 12]}}",
                                    std::string(12, '\0'))),
       .command = kRun,
       .message = "overlap"},
      {.name = "Safetensors_UnknownDtype",
       .files = weights(Safetensors(
           "{\"a\": {\"dtype\": \"F12\", \"shape\": [2], \"data_offsets\": [0, 8]}}",
           std::string(8, '\0'))),
       .command = kRun,
       .message = "F12"},
      {.name = "Safetensors_DtypeNotAString",
       .files = weights(Safetensors(
           "{\"a\": {\"dtype\": 4, \"shape\": [2], \"data_offsets\": [0, 8]}}",
           std::string(8, '\0'))),
       .command = kRun,
       .message = "dtype must be a string"},
      {.name = "Safetensors_ShapeAndOffsetsDisagree",
       .files = weights(Safetensors("{\"a\": " + f32 + "[0, 4]}}", std::string(4, '\0'))),
       .command = kRun,
       .message = "do not hold 2 F32 values"},
      {.name = "Safetensors_NotTheModelsTensors",
       .files = weights(Safetensors("{\"a\": " + f32 + "[0, 8]}}", std::string(8, '\0'))),
       .command = kRun,
       .message = "{dir}/e.toml:6:"},
      {.name = "Tokenizer_MalformedJson",
       .files = {{"e.toml", Experiment("path = \"data.jsonl\"",
                                       "path = \"data.jsonl\"\ntokenizer = \"tokenizer.json\"")},
                 {"data.jsonl", kData},
                 {"tokenizer.json", "{\"model\": {\"type\": \"BPE\""}},
       .command = kRun,
       .message = "{dir}/e.toml:8:"},
      {.name = "Tokenizer_NotABpeModel",
       .files = {{"e.toml", Experiment("path = \"data.jsonl\"",
                                       "path = \"data.jsonl\"\ntokenizer = \"tokenizer.json\"")},
                 {"data.jsonl", kData},
                 {"tokenizer.json", "{\"model\": {\"type\": \"Unigram\"}}"}},
       .command = kRun,
       .message = "{dir}/e.toml:8:"},
      {.name = "Tokenizer_MissingFile",
       .files = {{"e.toml", Experiment("path = \"data.jsonl\"",
                                       "path = \"data.jsonl\"\ntokenizer = \"tokenizer.json\"")},
                 {"data.jsonl", kData}},
       .command = kRun,
       .message = "{dir}/e.toml:8:"},
  };
}

std::vector<BadInput> CommandLines() {
  const std::map<std::string, std::string> good = {{"e.toml", Experiment()}, {"data.jsonl", kData}};
  return {
      {.name = "CommandLine_UnknownOption",
       .files = good,
       .command = kRun + " --frobnicate",
       .message = "The following argument was not expected: --frobnicate"},
      {.name = "CommandLine_UnknownCommand",
       .command = "frobnicate",
       .message = "unknown command 'frobnicate': the commands are run, "},
      {.name = "CommandLine_NoCommand", .command = "", .message = "subcommand"},
      {.name = "CommandLine_RunWithoutFile", .command = "run", .message = "file is required"},
      {.name = "CommandLine_BadRerun",
       .files = good,
       .command = kRun + " --rerun sometimes",
       .message = "--rerun sometimes: expected failed or all"},
      {.name = "CommandLine_CellTimeoutNotANumber",
       .files = good,
       .command = kRun + " --cell-timeout soon",
       .message = "--cell-timeout"},
      {.name = "CommandLine_BadFormat",
       .command = "query \"SELECT 1\" --db {dir}/r.db --format xml",
       .message = "xml"},
      {.name = "CommandLine_UnknownColumn",
       .files = good,
       .command = kRun + " --columns nonsense",
       .message = "nonsense"},
  };
}

std::vector<BadInput> Databases() {
  const std::map<std::string, std::string> good = {{"e.toml", Experiment()}, {"data.jsonl", kData}};
  std::map<std::string, std::string> corrupt = good;
  corrupt["r.db"] = "SQLite format 3" + std::string(4096, 'x');
  const auto newer = [](const fs::path& dir) { WriteDatabaseWithVersion(dir / "r.db", 9999); };
  return {
      {.name = "Database_CorruptOnRun",
       .files = corrupt,
       .command = kRun,
       .message = "{dir}/r.db: not a results database"},
      {.name = "Database_CorruptOnQuery",
       .files = corrupt,
       .command = "query \"SELECT 1\" --db {dir}/r.db",
       .message = "{dir}/r.db: not a results database"},
      {.name = "Database_NewerOnRun",
       .files = good,
       .command = kRun,
       .message = "use a newer memsweep",
       .setup = newer},
      {.name = "Database_NewerOnCompare",
       .command = "compare --db {dir}/r.db",
       .message = "use a newer memsweep",
       .setup = newer},
      {.name = "Database_MissingOnQuery",
       .command = "query \"SELECT 1\" --db {dir}/r.db",
       .message = "{dir}/r.db"},
      {.name = "Database_ReadOnlyOnRun",
       .files = good,
       .command = kRun,
       .message = "{dir}/r.db",
       .setup =
           [](const fs::path& dir) {
             WriteDatabaseWithVersion(dir / "r.db", 0);
             chmod((dir / "r.db").c_str(), 0444);
           },
       .needs = Needs::kNotRoot},
  };
}

std::vector<BadInput> Catalogue() {
  std::vector<BadInput> all;
  for (auto part : {ExperimentFiles, Overrides, DataFiles, Plugins, ModelFiles, CommandLines,
                    Databases}) {
    for (BadInput& input : part()) {
      // Rows that do not name their data get the good corpus.
      if (input.files.count("e.toml") > 0 && input.files.count("data.jsonl") == 0 &&
          input.name != "Data_MissingFile" && input.name.rfind("Data_Directory", 0) != 0) {
        input.files["data.jsonl"] = kData;
      }
      all.push_back(std::move(input));
    }
  }
  return all;
}

class BadInputCatalogueTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputCatalogueTest, ExitsTwoNamingTheProblemAndWritesNothing) {
  const BadInput& input = GetParam();
  if (input.needs == Needs::kNotRoot && geteuid() == 0) {
    GTEST_SKIP() << "running as root: permissions do not stop root from reading or writing";
  }
  const fs::path dir = FreshTempDir("bad_" + input.name);
  const fs::path cache = FreshTempDir("bad_cache_" + input.name);
  for (const auto& [name, content] : input.files) {
    const fs::path path = dir / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << Fill(content, dir);
  }
  if (input.setup) input.setup(dir);
  const std::map<std::string, std::string> before = Contents(dir);

  const std::string env = "XDG_CACHE_HOME=" + cache.string() +
                          (input.env.empty() ? "" : " " + Fill(input.env, dir));
  const Outcome out = RunMemsweep(Fill(input.command, dir), env);

  RecordProperty("output", out.output);  // the messages, for --gtest_output=xml
  EXPECT_EQ(out.exit_code, input.exit_code) << out.output;
  const std::string message = Fill(input.message, dir);
  EXPECT_NE(out.output.find(message), std::string::npos)
      << "expected: " << message << "\noutput:\n" << out.output;
  EXPECT_EQ(out.output.find("internal error"), std::string::npos) << out.output;
  // `run` logs "[1/N] …" as its first cell starts.
  EXPECT_EQ(out.output.find(" [1/"), std::string::npos) << "a cell started:\n" << out.output;
  const std::map<std::string, std::string> after = Contents(dir);
  for (const auto& [name, content] : after) {
    const auto was = before.find(name);
    EXPECT_TRUE(was != before.end()) << name << " was created\n" << out.output;
    if (was != before.end()) EXPECT_TRUE(was->second == content) << name << " was changed";
  }
  for (const auto& [name, content] : before) {
    EXPECT_EQ(after.count(name), 1u) << name << " was removed";
  }
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);
  fs::remove_all(dir);
  fs::remove_all(cache);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInputCatalogueTest, ::testing::ValuesIn(Catalogue()),
                         [](const ::testing::TestParamInfo<BadInput>& info) {
                           return info.param.name;
                         });

TEST(BadInputCatalogueTest, HasAtLeastFortyRows) { EXPECT_GE(Catalogue().size(), 40u); }

}  // namespace
