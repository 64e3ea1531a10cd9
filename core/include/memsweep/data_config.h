// DataConfig: where the training text comes from and how it is cut into micro-batches.
#pragma once

#include <cstdint>
#include <string>

namespace memsweep::data {

enum class DataFormat : uint8_t {
  kJsonl,   // one JSON object per line; the document is the string under `text_field`, or the
            // strings under "prompt" and "completion" (instruction data)
  kText,    // plain UTF-8 text; documents are separated by one or more blank lines
  kTokens,  // pre-tokenized flat array of token ids (nanoGPT-style .bin), no header
};

enum class TokenDtype : uint8_t { kUint16, kUint32 };

enum class Padding : uint8_t {
  kLongest,    // pad each micro-batch to its longest row
  kMaxLength,  // pad every row to seq_len
};

// Which tokens of a document the loss is taken on.
enum class TrainOn : uint8_t {
  kAll,         // every token (a prompt/completion line trains as prompt + completion)
  kCompletion,  // JSONL prompt/completion lines: only the completion's tokens (and EOS)
};

// The batching fields' defaults, in one place: batching/default's parameter schema spells its
// defaults from these, so a DataConfig that no batching strategy has configured holds what a
// run without [strategies.batching] gets.
#define MEMSWEEP_DEFAULT_SEQ_LEN 256
#define MEMSWEEP_DEFAULT_MICRO_BATCH_SIZE 4
#define MEMSWEEP_DEFAULT_ACCUMULATION_STEPS 1

struct DataConfig {
  std::string path;  // resolved (absolute or relative to the working directory)
  DataFormat format = DataFormat::kJsonl;
  std::string text_field = "text";
  // A Hugging Face tokenizer.json (or its directory) for text formats; "" = memsweep's byte
  // tokenizer.
  std::string tokenizer;
  TokenDtype token_dtype = TokenDtype::kUint16;
  int64_t seq_len = MEMSWEEP_DEFAULT_SEQ_LEN;  // maximum tokens per row fed to the model; longer documents truncated
  Padding padding = Padding::kLongest;
  int64_t micro_batch_size = MEMSWEEP_DEFAULT_MICRO_BATCH_SIZE;
  int64_t accumulation_steps = MEMSWEEP_DEFAULT_ACCUMULATION_STEPS;
  TrainOn train_on = TrainOn::kAll;
};

}  // namespace memsweep::data
