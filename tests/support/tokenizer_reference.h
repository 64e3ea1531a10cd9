// The comparison both tokenizer reference tests make: every text a reference maker wrote
// ({"texts": [...], "ids": [...]}, tests/core/data/*_reference/make_references.py) encoded by
// memsweep must give exactly the reference implementation's ids. Prints the counts and the time
// (docs/models.md quotes them).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/data/text_tokenizer.h"

namespace memsweep::testing_support {

// `name`: the tokenizer file's case name; `reference`: the implementation the ids came from.
inline void ExpectReferenceIds(const data::TextTokenizer& tokenizer, const std::string& ids_file,
                               const std::string& name, const std::string& reference) {
  std::ifstream in(ids_file);
  const nlohmann::json made = nlohmann::json::parse(in);
  const auto& texts = made.at("texts");
  const auto& ids = made.at("ids");
  ASSERT_GT(texts.size(), 1000u) << ids_file;
  int64_t total = 0, mismatched = 0;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<int32_t> got = tokenizer.Encode(texts[i].get<std::string>());
    total += static_cast<int64_t>(got.size());
    if (got != ids[i].get<std::vector<int32_t>>()) {
      ++mismatched;
      ADD_FAILURE() << name << ": text " << i << " (" << texts[i].dump().substr(0, 80)
                    << ") gives other ids than " << reference;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %lld pieces, %zu texts, %lld ids, %lld mismatches, %.3f s\n", name.c_str(),
              static_cast<long long>(tokenizer.VocabSize()), texts.size(),
              static_cast<long long>(total), static_cast<long long>(mismatched), seconds);
}

}  // namespace memsweep::testing_support
