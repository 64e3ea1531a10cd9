// A real tokenizer without Python: a 600-piece BPE SentencePiece model with byte fallback,
// trained on the bundled corpus by libsentencepiece once per test process, in a folder of its
// own (ctest runs tests in parallel processes) that is removed when the process ends.
//
//   const std::string dir = TrainedSentencePieceDir();  // dir + "/tokenizer.model"
#pragma once

#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "support/run_configs.h"

namespace memsweep::testing_support {

inline const std::string& TrainedSentencePieceDir() {
  static const std::string dir = [] {
    const std::string out =
        ::testing::TempDir() + "sentencepiece-model-" + std::to_string(::getpid());
    std::filesystem::create_directories(out);
    const std::string text = out + "/corpus.txt";
    {
      std::ifstream in(SourcePath("experiments/data/devils-dictionary.jsonl"));
      std::ofstream corpus(text);
      for (std::string line; std::getline(in, line);) {
        if (!line.empty())
          corpus << nlohmann::json::parse(line).at("text").get<std::string>() << "\n";
      }
    }
    const auto status = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + text + " --model_prefix=" + out + "/tokenizer --vocab_size=600" +
        " --model_type=bpe --byte_fallback=true --num_threads=1 --minloglevel=2");
    if (!status.ok()) throw std::runtime_error("training failed: " + status.ToString());
    return out;
  }();
  static const struct Cleanup {
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup;
  return dir;
}

}  // namespace memsweep::testing_support
