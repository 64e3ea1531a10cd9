// Token files: pre-tokenized training data as a flat array of little-endian uint16 or uint32
// token ids with no header (the nanoGPT .bin layout, e.g. from its prepare.py scripts).
//
//   WriteTokenFile("/tmp/train.bin", {50256, 15496, 995}, TokenDtype::kUint16);
//   std::vector<int32_t> tokens = LoadTokenFile("/tmp/train.bin", TokenDtype::kUint16);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsweep/data_config.h"
#include "core/data/document_source.h"  // DataError

namespace memsweep::data {

// Bytes per token id on disk: 2 for kUint16, 4 for kUint32.
int64_t TokenDtypeBytes(TokenDtype dtype);

// Reads every token id of `path`. Throws DataError naming the file if it is missing, its size is
// not a multiple of the element size (wrong [data] token_dtype, or a truncated file), or a
// uint32 id does not fit int32.
std::vector<int32_t> LoadTokenFile(const std::string& path, TokenDtype dtype);

// Writes `tokens` to `path` (replacing it) in the layout LoadTokenFile reads. Throws DataError if
// an id is negative or too large for `dtype`, or the file cannot be written.
void WriteTokenFile(const std::string& path, const std::vector<int32_t>& tokens, TokenDtype dtype);

}  // namespace memsweep::data
