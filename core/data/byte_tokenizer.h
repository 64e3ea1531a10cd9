// Byte-level tokenizer: every UTF-8 byte is its own token, plus three special tokens. Needs no
// vocabulary file, so any text trains out of the box with a fixed vocabulary of 259 ids.
//
//   std::vector<int32_t> ids = Encode("hi");  // {kBosId, 'h', 'i', kEosId}
//   std::string text = Decode(ids);           // "hi" (special tokens are skipped)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::data {

// Ids 0..255 are the byte values themselves.
constexpr int32_t kBosId = 256;          // begins every encoded document
constexpr int32_t kEosId = 257;          // ends every encoded document
constexpr int32_t kPadId = 258;          // fills input positions past the end of a row
constexpr int64_t kByteVocabSize = 259;  // smallest vocab_size a model needs for byte tokens

// Returns kBosId, one id per byte of `text`, kEosId.
std::vector<int32_t> Encode(std::string_view text);

// Concatenates the bytes of all byte ids; special ids (and any id outside 0..255) are skipped.
std::string Decode(const std::vector<int32_t>& ids);

}  // namespace memsweep::data
