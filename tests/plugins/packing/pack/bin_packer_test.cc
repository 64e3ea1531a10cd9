#include "packing/pack/bin_packer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "memsweep/token_sequences.h"
#include "plugins/packing/packing_test_support.h"

namespace memsweep::plugins::packing {
namespace {

constexpr PackingAlgorithm kAlgorithms[] = {PackingAlgorithm::kFirstFitDecreasing,
                                            PackingAlgorithm::kBestFitDecreasing};

const char* Name(PackingAlgorithm algorithm) {
  return algorithm == PackingAlgorithm::kFirstFitDecreasing ? "ffd" : "bfd";
}

// Every item lands in exactly one bin, and no bin holds more than the capacity.
void ExpectValidPacking(const std::vector<int64_t>& sizes, int64_t capacity,
                        const std::vector<std::vector<int64_t>>& bins, const std::string& what) {
  std::vector<int> seen(sizes.size(), 0);
  for (const auto& bin : bins) {
    ASSERT_FALSE(bin.empty()) << what;
    int64_t used = 0;
    for (int64_t item : bin) {
      ASSERT_GE(item, 0) << what;
      ASSERT_LT(item, static_cast<int64_t>(sizes.size())) << what;
      ++seen[item];
      used += sizes[item];
    }
    EXPECT_LE(used, capacity) << what;
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << what << ": item " << i;
}

TEST(BinPackerTest, PlacesLargestFirstIntoTheFirstBinWithRoom) {
  const auto bins = PackBins({5, 3, 7, 1}, 8, PackingAlgorithm::kFirstFitDecreasing);
  EXPECT_EQ(bins, (std::vector<std::vector<int64_t>>{{2, 3}, {0, 1}}));
}

// 8 and 6 open two bins, 3 joins the 6 (rooms now 2 and 1); the last item, 1, goes to the
// oldest bin with room under first fit and to the tightest under best fit.
TEST(BinPackerTest, BestFitTakesTheTightestBinWhereFirstFitTakesTheOldest) {
  const std::vector<int64_t> sizes = {8, 6, 3, 1};
  EXPECT_EQ(PackBins(sizes, 10, PackingAlgorithm::kFirstFitDecreasing),
            (std::vector<std::vector<int64_t>>{{0, 3}, {1, 2}}));
  EXPECT_EQ(PackBins(sizes, 10, PackingAlgorithm::kBestFitDecreasing),
            (std::vector<std::vector<int64_t>>{{0}, {1, 2, 3}}));
}

TEST(BinPackerTest, RandomInputsArePackedValidlyAndDeterministically) {
  std::mt19937_64 engine(12345);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t capacity = 1 + static_cast<int64_t>(engine() % 300);
    const auto count = static_cast<size_t>(engine() % 400);
    std::vector<int64_t> sizes(count);
    // Long-tailed: many small items, a few up to the capacity.
    for (auto& size : sizes) {
      const double u = static_cast<double>(engine() % 10000) / 10000.0;
      size = 1 + static_cast<int64_t>(std::pow(u, 3.0) * static_cast<double>(capacity - 1));
    }
    for (PackingAlgorithm algorithm : kAlgorithms) {
      const std::string what = std::string(Name(algorithm)) + " trial " + std::to_string(trial);
      const auto bins = PackBins(sizes, capacity, algorithm);
      ExpectValidPacking(sizes, capacity, bins, what);
      EXPECT_EQ(PackBins(sizes, capacity, algorithm), bins) << what;
      int64_t total = 0;
      for (int64_t size : sizes) total += size;
      // No two bins are together at most half full (both heuristics guarantee it).
      int64_t at_most_half_full = 0;
      for (const auto& bin : bins) {
        int64_t used = 0;
        for (int64_t item : bin) used += sizes[item];
        at_most_half_full += 2 * used <= capacity;
      }
      EXPECT_LE(at_most_half_full, 1) << what;
      EXPECT_GE(static_cast<int64_t>(bins.size()) * capacity, total) << what;
    }
  }
}

// Rows of seq_len positions filled with the bundled corpus' documents (truncated to seq_len + 1
// tokens, as packing/pack does): at least 99% of all positions hold a document.
TEST(BinPackerTest, FillsAtLeast99PercentOfTheBundledCorpusRows) {
  for (int64_t seq_len : {256, 512, 1024}) {
    const data::TokenSequences sequences = data::LoadTokenSequences(
        testing_support::DevilsDictionary(seq_len, 1), data::LongDocuments::kTruncate);
    std::vector<int64_t> sizes;
    for (int64_t s = 0; s < sequences.Count(); ++s) sizes.push_back(sequences.Positions(s));
    for (PackingAlgorithm algorithm : kAlgorithms) {
      const auto bins = PackBins(sizes, seq_len, algorithm);
      const double fill = static_cast<double>(sequences.TotalPositions()) /
                          static_cast<double>(static_cast<int64_t>(bins.size()) * seq_len);
      EXPECT_GE(fill, 0.99) << Name(algorithm) << " seq_len " << seq_len << ": " << bins.size()
                            << " rows";
    }
  }
}

TEST(BinPackerTest, RejectsItemsThatDoNotFit) {
  EXPECT_THROW(PackBins({3, 9}, 8, PackingAlgorithm::kFirstFitDecreasing), std::invalid_argument);
  EXPECT_THROW(PackBins({0}, 8, PackingAlgorithm::kBestFitDecreasing), std::invalid_argument);
  EXPECT_TRUE(PackBins({}, 8, PackingAlgorithm::kFirstFitDecreasing).empty());
}

}  // namespace
}  // namespace memsweep::plugins::packing
