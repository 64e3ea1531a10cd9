// Tokenizer throughput: memsweep's byte tokenizer and each tokenizer file given (tokenizer.json
// or tokenizer.model) encode the bundled corpus (every document's text), R rounds, the
// tokenizers interleaved within each round. Every round loads each file afresh, so every pass
// starts with an empty word cache, as a cell's does. Prints per tokenizer the median load time,
// the median and best time over rounds for the whole corpus, MB/s of text and ids/s. Not run by
// ctest;
// tests/bench/tokenizer_bench.sh supplies the reference tests' tokenizer files.
//   memsweep_bench_tokenizers [--rounds 5] [--corpus file.jsonl] [tokenizer files...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "core/data/byte_tokenizer.h"
#include "core/data/text_tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

struct Candidate {
  std::string name;
  std::string file;  // empty: the byte tokenizer
  std::vector<double> load_times;
  std::vector<double> times;
  int64_t ids = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace memsweep;
  const int rounds = bench::ArgInt(argc, argv, "--rounds", 5);
  std::string corpus_path =
      std::string(MEMSWEEP_SOURCE_DIR) + "/experiments/data/devils-dictionary.jsonl";
  std::vector<Candidate> candidates;
  candidates.push_back({"byte (memsweep's default)", ""});
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0) {
      ++i;
    } else if (std::strcmp(argv[i], "--corpus") == 0 && i + 1 < argc) {
      corpus_path = argv[++i];
    } else {
      candidates.push_back({argv[i], argv[i]});
    }
  }
  std::vector<std::string> texts;
  int64_t bytes = 0;
  std::ifstream in(corpus_path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    texts.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
    bytes += static_cast<int64_t>(texts.back().size());
  }
  std::printf(
      "memsweep_bench_tokenizers  corpus: %s (%zu texts, %.2f MB of text), %d rounds, "
      "one thread\nload average at start: %s\n",
      corpus_path.c_str(), texts.size(), bytes / 1e6, rounds, bench::LoadAverage().c_str());
  for (int round = 0; round < rounds; ++round) {
    for (Candidate& c : candidates) {
      std::unique_ptr<data::TextTokenizer> tokenizer;
      if (!c.file.empty()) {
        const auto load = Clock::now();
        tokenizer = data::LoadTextTokenizer(c.file);
        c.load_times.push_back(Seconds(load));
      }
      int64_t ids = 0;
      const auto start = Clock::now();
      for (const std::string& text : texts) {
        ids += static_cast<int64_t>(tokenizer ? tokenizer->Encode(text).size()
                                              : data::Encode(text).size());
      }
      c.times.push_back(Seconds(start));
      c.ids = ids;
    }
  }
  std::printf("%-60s %8s %9s %9s %9s %10s\n", "tokenizer", "load_s", "median_s", "best_s", "MB/s",
              "Mids/s");
  for (Candidate& c : candidates) {
    std::sort(c.times.begin(), c.times.end());
    std::sort(c.load_times.begin(), c.load_times.end());
    const double median = c.times[c.times.size() / 2];
    const double load_s = c.load_times.empty() ? 0.0 : c.load_times[c.load_times.size() / 2];
    std::string name = c.name;  // the folder and file name tell the tokenizers apart
    const size_t slash = name.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      const size_t before = name.rfind('/', slash - 1);
      if (before != std::string::npos) name = name.substr(before + 1);
    }
    std::printf("%-60s %8.3f %9.3f %9.3f %9.1f %10.2f   (%lld ids)\n", name.c_str(), load_s,
                median, c.times.front(), bytes / median / 1e6, c.ids / median / 1e6,
                static_cast<long long>(c.ids));
  }
  std::printf("load average at end: %s\n", bench::LoadAverage().c_str());
  return 0;
}
