// SentencePieceTokenizer: SentencePiece models (tokenizer.model), as Llama-2 and Mistral ship
// them, through Debian's libsentencepiece — the library that wrote them — so the ids are
// SentencePiece's own (BPE or unigram, byte fallback, the model's normalizer and dummy prefix).
//
//   SentencePieceTokenizer tokenizer = SentencePieceTokenizer::Load("tokenizer.model");
//   std::vector<int32_t> ids = tokenizer.Encode("Hello world");  // no BOS/EOS added
#pragma once

#include <memory>
#include <string>

#include "core/data/text_tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace memsweep::data {

class SentencePieceTokenizer : public TextTokenizer {
 public:
  // Throws TokenizerError naming the file when it is missing or not a SentencePiece model.
  static std::unique_ptr<SentencePieceTokenizer> Load(const std::string& path);
  ~SentencePieceTokenizer() override;

  std::vector<int32_t> Encode(std::string_view text) const override;
  int32_t TokenId(const std::string& token) const override;
  int64_t VocabSize() const override;
  int32_t OwnBos() const override;
  int32_t OwnEos() const override;

 private:
  SentencePieceTokenizer();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::string path_;
};

}  // namespace memsweep::data
