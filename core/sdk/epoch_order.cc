#include "memsweep/epoch_order.h"

#include <numeric>
#include <random>
#include <utility>

namespace memsweep::data {
namespace {

uint64_t SplitMix64(uint64_t value) {
  value += 0x9E3779B97F4A7C15ULL;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ULL;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBULL;
  return value ^ (value >> 31);
}

}  // namespace

uint64_t DeriveSeed(uint64_t seed, int64_t index) {
  if (index == 0) return seed;
  return SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(index)));
}

void SeededShuffle(std::vector<int64_t>& values, uint64_t seed) {
  std::mt19937_64 engine(seed);
  for (size_t i = values.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(engine() % i);
    std::swap(values[i - 1], values[j]);
  }
}

EpochOrder::EpochOrder(int64_t count, uint64_t seed)
    : seed_(seed), order_(static_cast<size_t>(count)) {
  Shuffle();
}

void EpochOrder::Shuffle() {
  std::iota(order_.begin(), order_.end(), int64_t{0});
  SeededShuffle(order_, DeriveSeed(seed_, epoch_));
  cursor_ = 0;
}

int64_t EpochOrder::Next() {
  const int64_t index = order_[static_cast<size_t>(cursor_)];
  if (++cursor_ == static_cast<int64_t>(order_.size())) {
    ++epoch_;
    Shuffle();
  }
  return index;
}

}  // namespace memsweep::data
