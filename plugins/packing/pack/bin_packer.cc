#include "bin_packer.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

namespace memsweep::plugins::packing {
namespace {

// Largest remaining room over bins, as a segment tree, so that "the first bin with at least
// `size` room" is found in O(log bins). Bins not yet opened have the full capacity.
class FirstFitTree {
 public:
  FirstFitTree(int64_t max_bins, int64_t capacity) {
    while (leaves_ < max_bins) leaves_ *= 2;
    room_.assign(static_cast<size_t>(2 * leaves_), capacity);
  }
  // The lowest-numbered bin with room >= size (one always exists: there are as many bins as
  // items).
  int64_t FirstWithRoom(int64_t size) const {
    int64_t node = 1;
    while (node < leaves_) node = room_[2 * node] >= size ? 2 * node : 2 * node + 1;
    return node - leaves_;
  }
  void Take(int64_t bin, int64_t size) {
    int64_t node = bin + leaves_;
    room_[node] -= size;
    for (node /= 2; node >= 1; node /= 2) room_[node] = std::max(room_[2 * node], room_[2 * node + 1]);
  }

 private:
  int64_t leaves_ = 1;
  std::vector<int64_t> room_;
};

std::vector<int64_t> DecreasingOrder(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> order(sizes.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&sizes](int64_t a, int64_t b) { return sizes[a] > sizes[b]; });
  return order;
}

std::vector<std::vector<int64_t>> FirstFit(const std::vector<int64_t>& sizes,
                                           const std::vector<int64_t>& order, int64_t capacity) {
  std::vector<std::vector<int64_t>> bins;
  FirstFitTree tree(static_cast<int64_t>(sizes.size()), capacity);
  for (int64_t item : order) {
    const int64_t bin = tree.FirstWithRoom(sizes[item]);
    if (bin == static_cast<int64_t>(bins.size())) bins.emplace_back();
    bins[bin].push_back(item);
    tree.Take(bin, sizes[item]);
  }
  return bins;
}

std::vector<std::vector<int64_t>> BestFit(const std::vector<int64_t>& sizes,
                                          const std::vector<int64_t>& order, int64_t capacity) {
  std::vector<std::vector<int64_t>> bins;
  // room -> bin; among bins with equal room the oldest comes first (multimap keeps insertion
  // order of equal keys), which keeps the result deterministic.
  std::multimap<int64_t, int64_t> by_room;
  for (int64_t item : order) {
    const int64_t size = sizes[item];
    auto tightest = by_room.lower_bound(size);
    int64_t bin;
    int64_t room;
    if (tightest == by_room.end()) {
      bin = static_cast<int64_t>(bins.size());
      bins.emplace_back();
      room = capacity;
    } else {
      bin = tightest->second;
      room = tightest->first;
      by_room.erase(tightest);
    }
    bins[bin].push_back(item);
    if (room - size > 0) by_room.emplace(room - size, bin);
  }
  return bins;
}

}  // namespace

bool ParsePackingAlgorithm(const std::string& name, PackingAlgorithm& algorithm) {
  if (name == "ffd") {
    algorithm = PackingAlgorithm::kFirstFitDecreasing;
    return true;
  }
  if (name == "bfd") {
    algorithm = PackingAlgorithm::kBestFitDecreasing;
    return true;
  }
  return false;
}

std::vector<std::vector<int64_t>> PackBins(const std::vector<int64_t>& sizes, int64_t capacity,
                                           PackingAlgorithm algorithm) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1 || sizes[i] > capacity) {
      throw std::invalid_argument("PackBins: item " + std::to_string(i) + " has size " +
                                  std::to_string(sizes[i]) + ", outside 1.." +
                                  std::to_string(capacity));
    }
  }
  const std::vector<int64_t> order = DecreasingOrder(sizes);
  return algorithm == PackingAlgorithm::kFirstFitDecreasing ? FirstFit(sizes, order, capacity)
                                                            : BestFit(sizes, order, capacity);
}

}  // namespace memsweep::plugins::packing
