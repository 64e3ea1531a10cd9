// Bin packing of sequences into rows: items of known size (positions) into bins of a fixed
// capacity (seq_len), decreasing-size heuristics. Deterministic: items of equal size are taken in
// index order, so the same input always gives the same bins.
//
//   std::vector<std::vector<int64_t>> bins = PackBins({5, 3, 7, 1}, /*capacity=*/8,
//                                                     PackingAlgorithm::kFirstFitDecreasing);
//   // {{2, 3}, {0, 1}}: item indices per bin, in the order they were placed
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memsweep::plugins::packing {

enum class PackingAlgorithm : uint8_t {
  kFirstFitDecreasing,  // largest first, each into the first (oldest) bin with room
  kBestFitDecreasing,   // largest first, each into the bin it leaves with the least room
};

// "ffd" / "bfd"; false for anything else.
bool ParsePackingAlgorithm(const std::string& name, PackingAlgorithm& algorithm);

// Packs items of `sizes` (each 1..capacity) into bins of `capacity`. Returns the bins in the
// order they were opened, each as item indices in the order they were placed. Both heuristics use
// at most 11/9 OPT + 4 bins (Johnson 1973); both run in O(n log n). Throws std::invalid_argument
// for a size outside 1..capacity.
std::vector<std::vector<int64_t>> PackBins(const std::vector<int64_t>& sizes, int64_t capacity,
                                           PackingAlgorithm algorithm);

}  // namespace memsweep::plugins::packing
