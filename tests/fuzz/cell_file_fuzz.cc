// libFuzzer target: a cell file as `memsweep worker --cell FILE` reads it (core/cli/
// worker_command.cc: the cell's TOML, then its validation as a run). A ConfigError or DataError
// is a refusal (the worker exits 2); any other exception, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>

#include "core/config/config_error.h"
#include "core/config/run_config_loader.h"
#include "core/experiment/cell.h"
#include "memsweep/data_error.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const memsweep::experiment::Cell cell =
        memsweep::experiment::CellFromToml(memsweep::fuzz::AsText(data, size), "cell.toml");
    memsweep::config::ValidatedRunFromTable(cell.document,
                                            MEMSWEEP_SOURCE_DIR "/experiments/fuzz-input.toml");
  } catch (const memsweep::config::ConfigError&) {
  } catch (const memsweep::data::DataError&) {
  }
  return 0;
}
