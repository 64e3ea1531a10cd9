// libFuzzer target: an experiment file as `memsweep plan` and `memsweep run` read it — TOML, the
// --set overrides, the [matrix] with its include/exclude entries and ablation steps, expansion
// into cells and each cell's validation as a run (plugins resolved and their parameters checked).
// The input is the experiment file; lines after a line "#--set" are --set overrides, one per
// line. It is named as a file in experiments/, so the bundled models, tokenizers and data it
// names resolve as they do for the bundled experiments (the seed corpus). A ConfigError or a
// DataError is memsweep refusing bad input (exit 2, as it should); any other exception, a crash
// or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/config_error.h"
#include "core/experiment/experiment_plan.h"
#include "memsweep/data_error.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = memsweep::fuzz::AsText(data, size);
  std::vector<std::string> overrides;
  const size_t marker = text.find("\n#--set\n");
  if (marker != std::string_view::npos) {
    std::string_view rest = text.substr(marker + 8);
    text = text.substr(0, marker + 1);
    while (!rest.empty()) {
      const size_t end = rest.find('\n');
      const std::string_view line = rest.substr(0, end);
      if (!line.empty()) overrides.emplace_back(line);
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
  }
  try {
    const memsweep::experiment::ExperimentPlan plan = memsweep::experiment::ParseExperimentPlan(
        text, MEMSWEEP_SOURCE_DIR "/experiments/fuzz-input.toml", overrides);
    // Every cell the plan accepts is one a worker can read back from its cell file.
    for (const auto& cell : plan.cells) {
      const auto again = memsweep::experiment::CellFromToml(
          memsweep::experiment::CellToToml(cell), "cell.toml");
      if (again.hash != cell.hash) __builtin_trap();
    }
  } catch (const memsweep::config::ConfigError&) {
  } catch (const memsweep::data::DataError&) {
  }
  return 0;
}
