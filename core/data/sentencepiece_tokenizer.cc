#include "core/data/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <filesystem>

namespace memsweep::data {

SentencePieceTokenizer::SentencePieceTokenizer()
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::Load(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw TokenizerError(path +
                         ": no such file; give a SentencePiece tokenizer.model or the "
                         "model directory holding it");
  }
  std::unique_ptr<SentencePieceTokenizer> tokenizer(new SentencePieceTokenizer());
  tokenizer->path_ = path;
  const sentencepiece::util::Status status = tokenizer->processor_->Load(path);
  if (!status.ok()) {
    throw TokenizerError(
        path + ": not a SentencePiece model (" + status.ToString() +
        "): give the model's own tokenizer.model, or name its Hugging Face tokenizer.json");
  }
  return tokenizer;
}

std::vector<int32_t> SentencePieceTokenizer::Encode(std::string_view text) const {
  std::vector<int> ids;
  const sentencepiece::util::Status status =
      processor_->Encode(absl::string_view(text.data(), text.size()), &ids);
  if (!status.ok()) throw TokenizerError(path_ + ": encoding failed (" + status.ToString() + ")");
  return std::vector<int32_t>(ids.begin(), ids.end());
}

int32_t SentencePieceTokenizer::TokenId(const std::string& token) const {
  const int id = processor_->PieceToId(token);
  // Unknown pieces map to the unknown id; only a piece that is itself that token counts.
  return processor_->IdToPiece(id) == token ? id : -1;
}

int64_t SentencePieceTokenizer::VocabSize() const { return processor_->GetPieceSize(); }
int32_t SentencePieceTokenizer::OwnBos() const { return processor_->bos_id(); }
int32_t SentencePieceTokenizer::OwnEos() const { return processor_->eos_id(); }

}  // namespace memsweep::data
