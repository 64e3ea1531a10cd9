// BpeTokenizer: Hugging Face byte-level BPE tokenizers (tokenizer.json), as Llama-3, Qwen2 and
// Phi-4 use them, producing the ids Hugging Face's `tokenizers` produces.
//
//   BpeTokenizer tokenizer = BpeTokenizer::Load("tokenizer.json");
//   std::vector<int32_t> ids = tokenizer.Encode("Hello world");  // no BOS/EOS added
//
// What it implements (anything else in the file is refused with TokenizerError, naming it):
//   added tokens   matched first, literally, anywhere in the text (they are never split)
//   normalizer     none, or NFC (Qwen2; with ICU), applied to the text between added tokens
//   pre_tokenizer  Split(regex, "Isolated") then ByteLevel(use_regex false) — Llama-3, Qwen2 —
//                  or ByteLevel(use_regex true) (GPT-2's regex); the regex runs on PCRE2 with
//                  Unicode classes, `\s` as Unicode White_Space (what Oniguruma matches)
//   model          BPE over the byte-level alphabet: merges by rank (strings "a b" or pairs),
//                  ignore_merges (a whole pre-token in the vocabulary is one id), no byte
//                  fallback, no dropout
//
// Encoding keeps the ids of up to kWordCacheCapacity pre-tokens (words under 256 bytes), as
// Hugging Face's BPE does: natural text repeats its words, and a repeated word then costs one
// hash lookup instead of its merges. Encode is safe to call from several threads (one at a time
// runs; the regex's match data and the cache are the tokenizer's).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/data/text_tokenizer.h"

namespace memsweep::data {

class BpeTokenizer : public TextTokenizer {
 public:
  // Throws TokenizerError naming the file and what it cannot read.
  static BpeTokenizer Load(const std::string& path);
  ~BpeTokenizer() override;
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;

  std::vector<int32_t> Encode(std::string_view text) const override;
  // The id of a token's text (an added token such as "<|begin_of_text|>"), or -1.
  int32_t TokenId(const std::string& token) const override;
  int64_t VocabSize() const override;  // largest id + 1

  static constexpr size_t kWordCacheCapacity = 10000;

 private:
  BpeTokenizer();
  void EncodeSegment(std::string_view text, std::vector<int32_t>& out) const;
  // A pre-token's ids: from the word cache, or by MergeWord (then cached).
  void EncodeWord(const std::string& word, std::vector<int32_t>& out) const;
  void MergeWord(const std::string& word, std::vector<int32_t>& out) const;

  struct Regex;
  std::unique_ptr<Regex> regex_;  // also holds the mutex and the word cache
  std::unordered_map<std::string, int32_t> vocab_;
  // (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  std::vector<std::pair<std::string, int32_t>> added_;  // longest first
  std::array<bool, 256> added_first_byte_{};  // bytes an added token starts with
  bool ignore_merges_ = false;
  bool nfc_ = false;  // the normalizer: Unicode NFC before pre-tokenizing
  int64_t vocab_size_ = 0;
  std::string path_;
};

}  // namespace memsweep::data
