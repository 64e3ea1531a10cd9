// EpochOrder: an endless, seeded visiting order over `count` sequences: every sequence once per
// epoch, reshuffled at every epoch. The same seed always gives the same order, on every standard
// library (the shuffle uses std::mt19937_64's raw output, not std::shuffle).
//
//   EpochOrder order(sequences.Count(), seed);
//   int64_t first = order.Next();  // a sequence index; order.Epoch() counts completed passes
#pragma once

#include <cstdint>
#include <vector>

namespace memsweep::data {

// A well-mixed seed for stream `index` of `seed` (epochs, packing windows ...); index 0 gives
// `seed` itself.
uint64_t DeriveSeed(uint64_t seed, int64_t index);

// Shuffles `values` in place (Fisher-Yates with the raw output of std::mt19937_64(seed)).
void SeededShuffle(std::vector<int64_t>& values, uint64_t seed);

class EpochOrder {
 public:
  EpochOrder(int64_t count, uint64_t seed);
  // The next sequence index; after the last one of an epoch the order is reshuffled.
  int64_t Next();
  // Completed passes; the next index comes from epoch Epoch() (0-based).
  int64_t Epoch() const { return epoch_; }

 private:
  void Shuffle();

  uint64_t seed_;
  std::vector<int64_t> order_;
  int64_t cursor_ = 0;
  int64_t epoch_ = 0;
};

}  // namespace memsweep::data
