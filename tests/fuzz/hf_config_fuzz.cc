// libFuzzer target: a Hugging Face config.json (core/model/hf_config.cc), read as
// `[model] hf_config` reads it. A ModelConfigError is a refusal; anything else is a bug.
#include <cstddef>
#include <cstdint>

#include "core/model/hf_config.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      memsweep::fuzz::WriteScratch("config.json", memsweep::fuzz::AsText(data, size));
  try {
    memsweep::model::ReadHuggingFaceConfig(path);
  } catch (const memsweep::model::ModelConfigError&) {
  }
  return 0;
}
