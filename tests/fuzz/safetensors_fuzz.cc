// libFuzzer target: a .safetensors file (core/model/safetensors.cc): the header is parsed and
// checked against the file, then every tensor it accepts is read as a view of the mapping and
// its first and last bytes touched — an offset the check let through would fault here. A
// SafetensorsError is a refusal; anything else is a bug.
#include <cstddef>
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "core/model/safetensors.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      memsweep::fuzz::WriteScratch("model.safetensors", memsweep::fuzz::AsText(data, size));
  try {
    const memsweep::model::SafetensorsSet set = memsweep::model::OpenSafetensors(path);
    volatile uint8_t sink = 0;
    for (const auto& [name, entry] : set.Entries()) {
      const at::Tensor view = set.Read(entry);
      const size_t bytes = view.numel() * view.element_size();
      if (bytes != entry.end - entry.begin) __builtin_trap();
      if (bytes == 0) continue;
      const auto* first = static_cast<const uint8_t*>(view.data_ptr());
      sink = sink + first[0] + first[bytes - 1];
    }
  } catch (const memsweep::model::SafetensorsError&) {
  }
  return 0;
}
