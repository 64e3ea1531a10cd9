// libFuzzer target: the training-data reader (core/data/document_source.cc) on any bytes, as
// JSONL (whole texts and prompt/completion pairs) and as plain text. A DataError is the reader
// refusing bad input, as it should; anything else — another exception, a crash, a sanitizer
// report — is a bug. Built and run by tools/fuzz.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/data/document_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/memsweep-fuzz-data-" + std::to_string(getpid());
  if (size == 0) return 0;
  // The first byte chooses the format and what is trained on; the rest is the file.
  const uint8_t choice = data[0];
  {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  memsweep::data::DataConfig config;
  config.path = path;
  config.format = (choice & 1) ? memsweep::data::DataFormat::kText : memsweep::data::DataFormat::kJsonl;
  config.train_on = (choice & 2) ? memsweep::data::TrainOn::kCompletion : memsweep::data::TrainOn::kAll;
  if (choice & 4) config.text_field = "content";
  std::vector<memsweep::data::TextDocument> documents;
  try {
    documents = memsweep::data::LoadDocuments(config);
  } catch (const memsweep::data::DataError&) {
    return 0;
  }
  // What the loader accepts, the check (memsweep run's, before any cell) accepts and counts
  // alike; an exception here escapes and is reported.
  if (memsweep::data::CheckDocuments(config) != static_cast<int64_t>(documents.size())) {
    __builtin_trap();
  }
  return 0;
}
