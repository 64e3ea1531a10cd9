// DocumentEncoder: a document's text (or prompt and completion) → token ids, with the run's
// tokenizer: memsweep's byte tokenizer by default, or a real one ([data] tokenizer = a Hugging
// Face tokenizer.json, a SentencePiece tokenizer.model, or the model directory; text_tokenizer.h).
//
// With a real tokenizer a document is [BOS] + ids(text) + [EOS]: BOS is the
// tokenizer_config.json's bos_token when it has one and add_bos_token is not false (Llama-3:
// <|begin_of_text|>; Qwen2: none), EOS its eos_token when it has one (Llama-3: <|end_of_text|>,
// Qwen2: <|endoftext|>), so that packed documents stay apart. Without a tokenizer_config.json
// beside the file they are the model file's own (a SentencePiece model's <s> and </s>; a
// tokenizer.json defines none). A prompt/completion pair is encoded in two parts, prompt then
// completion.
//
// A tokenizer file is loaded once per process and kept (keyed by path, size and modification
// time): when planning loads it to check [model] vocab_size, the cells — forked from the runner —
// find it loaded instead of reading it again (Qwen's 7 MB tokenizer.json takes ~0.4 s). Once the
// token cache (token_cache.h) holds its id count and the corpus's ids, neither loads it.
//
//   DocumentEncoder encoder(config);                  // loads the tokenizer, or reuses it
//   std::vector<int32_t> ids = encoder.Encode("", text);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/data/text_tokenizer.h"
#include "memsweep/data_config.h"

namespace memsweep::data {

class DocumentEncoder {
 public:
  // Throws TokenizerError for a tokenizer that cannot be read.
  explicit DocumentEncoder(const DataConfig& config);
  // Ids of prompt + text with BOS/EOS; `prompt_tokens` (if given) receives how many leading ids
  // are BOS and the prompt's.
  std::vector<int32_t> Encode(const std::string& prompt, const std::string& text,
                              size_t* prompt_tokens = nullptr) const;
  // Ids run from 0 to VocabSize() - 1 (padding included).
  int64_t VocabSize() const;

 private:
  std::shared_ptr<const TextTokenizer> tokenizer_;  // null: the byte tokenizer
  int32_t bos_ = -1, eos_ = -1;
};

}  // namespace memsweep::data
