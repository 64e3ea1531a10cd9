// TextTokenizer: what the data pipeline asks of a real tokenizer — text to ids, an added token's
// id, the vocabulary's size and the model's own BOS/EOS — whichever file format it came from
// (Hugging Face tokenizer.json: bpe_tokenizer.h; SentencePiece tokenizer.model:
// sentencepiece_tokenizer.h). LoadTextTokenizer picks by the file.
//
//   std::unique_ptr<TextTokenizer> tokenizer = LoadTextTokenizer(TokenizerFile(path));
//   std::vector<int32_t> ids = tokenizer->Encode("Hello world");  // no BOS/EOS added
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::data {

class TokenizerError : public std::runtime_error {
 public:
  explicit TokenizerError(const std::string& message) : std::runtime_error(message) {}
};

class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;
  virtual std::vector<int32_t> Encode(std::string_view text) const = 0;
  // The id of a token's text (a special token such as "<|begin_of_text|>" or "<s>"), or -1.
  virtual int32_t TokenId(const std::string& token) const = 0;
  virtual int64_t VocabSize() const = 0;  // largest id + 1
  // The BOS/EOS ids the tokenizer file itself defines (SentencePiece models do), or -1; used
  // when no tokenizer_config.json sits beside the file.
  virtual int32_t OwnBos() const { return -1; }
  virtual int32_t OwnEos() const { return -1; }
};

// The tokenizer file a [data] tokenizer path names: the file itself, or in a model directory its
// tokenizer.model when there is one (SentencePiece; Llama-2 and Mistral directories carry both
// it and a tokenizer.json converted from it), else its tokenizer.json.
std::string TokenizerFile(const std::string& path);

// A *.model file loads as SentencePiece, anything else as a tokenizer.json. Throws
// TokenizerError naming the file and what it cannot read.
std::unique_ptr<TextTokenizer> LoadTextTokenizer(const std::string& file);

}  // namespace memsweep::data
