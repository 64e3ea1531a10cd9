#include "core/data/text_tokenizer.h"

#include <filesystem>

#include "core/data/bpe_tokenizer.h"
#include "core/data/sentencepiece_tokenizer.h"

namespace memsweep::data {

std::string TokenizerFile(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path)) return path;
  const fs::path model = fs::path(path) / "tokenizer.model";
  return (fs::exists(model) ? model : fs::path(path) / "tokenizer.json").string();
}

std::unique_ptr<TextTokenizer> LoadTextTokenizer(const std::string& file) {
  if (std::filesystem::path(file).extension() == ".model")
    return SentencePieceTokenizer::Load(file);
  return std::make_unique<BpeTokenizer>(BpeTokenizer::Load(file));
}

}  // namespace memsweep::data
