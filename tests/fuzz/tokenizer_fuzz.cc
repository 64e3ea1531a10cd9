// libFuzzer target: the byte-level BPE tokenizer (core/data/bpe_tokenizer.cc). The first byte
// chooses: odd — the input is a tokenizer.json, loaded (a TokenizerError is a refusal, as it
// should be), then used to encode a fixed text; even — the input is text (any bytes, invalid
// UTF-8 included) encoded by the bundled devils-bpe-8k tokenizer, whose ids must be in its
// vocabulary. Anything else — another exception, a crash, a sanitizer report — is a bug. Built
// and run by tools/fuzz, which passes the bundled tokenizer's path in MEMSWEEP_FUZZ_TOKENIZER.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "core/data/bpe_tokenizer.h"

namespace {

const memsweep::data::BpeTokenizer& Bundled() {
  static const auto tokenizer = [] {
    const char* path = std::getenv("MEMSWEEP_FUZZ_TOKENIZER");
    return std::make_unique<memsweep::data::BpeTokenizer>(memsweep::data::BpeTokenizer::Load(
        path != nullptr ? path : "experiments/models/devils-bpe-8k/tokenizer.json"));
  }();
  return *tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 1) == 0) {
    const memsweep::data::BpeTokenizer& tokenizer = Bundled();
    for (const int32_t id : tokenizer.Encode(rest)) {
      if (id < 0 || id >= tokenizer.VocabSize()) __builtin_trap();
    }
    return 0;
  }
  static const std::string path = "/tmp/memsweep-fuzz-tokenizer-" + std::to_string(getpid());
  {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(rest.data(), static_cast<std::streamsize>(rest.size()));
  }
  try {
    const memsweep::data::BpeTokenizer tokenizer = memsweep::data::BpeTokenizer::Load(path);
    for (const int32_t id : tokenizer.Encode("Hello, world! Ünïcödé 123 \n\t end")) {
      if (id < 0 || id >= tokenizer.VocabSize()) __builtin_trap();
    }
  } catch (const memsweep::data::TokenizerError&) {
  }
  return 0;
}
