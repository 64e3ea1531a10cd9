#include "caching_options.h"

#include <sstream>
#include <stdexcept>
#include <string>

namespace memsweep::plugins {
namespace {

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint64_t PowerOfTwoFloor(uint64_t v) { return uint64_t{1} << (63 - __builtin_clzll(v)); }

// Rounds size up to the next of `divisions` equal steps between two powers of two
// (e.g. 4 divisions: 1280 -> 1280, 1281 -> 1536, between 1024 and 2048 in steps of 256).
size_t RoundUpPower2Division(size_t size, uint64_t divisions) {
  if (IsPowerOfTwo(size)) return size;
  const uint64_t floor = PowerOfTwoFloor(size);
  const uint64_t step = floor / divisions;
  if (step == 0) return floor << 1;
  const uint64_t rounded_down = size & ~(step - 1);
  return rounded_down == size ? size : rounded_down + step;
}

}  // namespace

CachingOptions CachingOptions::FromParams(int64_t max_split_size_mb,
                                          int64_t roundup_power2_divisions,
                                          double garbage_collection_threshold,
                                          bool expandable_segments) {
  CachingOptions options;
  const int64_t min_split_mb = static_cast<int64_t>(kLargeBuffer >> 20);
  if (max_split_size_mb != -1 && max_split_size_mb <= min_split_mb) {
    throw std::invalid_argument("max_split_size_mb = " + std::to_string(max_split_size_mb) +
                                " is too small: set it above " + std::to_string(min_split_mb) +
                                " (the large segment size, in MiB), or -1 for unlimited");
  }
  if (max_split_size_mb > (int64_t{1} << 30)) {
    throw std::invalid_argument("max_split_size_mb = " + std::to_string(max_split_size_mb) +
                                " is too large: set it to at most 1073741824, or -1");
  }
  if (max_split_size_mb != -1) options.max_split_size = static_cast<size_t>(max_split_size_mb) << 20;
  if (roundup_power2_divisions < 0 || roundup_power2_divisions > 1024 ||
      (roundup_power2_divisions != 0 && !IsPowerOfTwo(roundup_power2_divisions))) {
    throw std::invalid_argument("roundup_power2_divisions = " +
                                std::to_string(roundup_power2_divisions) +
                                " is invalid: set it to 0 (off) or a power of two from 1 to 1024");
  }
  options.roundup_power2_divisions = roundup_power2_divisions;
  if (!(garbage_collection_threshold >= 0.0 && garbage_collection_threshold < 1.0)) {
    throw std::invalid_argument("garbage_collection_threshold = " +
                                std::to_string(garbage_collection_threshold) +
                                " is invalid: set it to 0 (off) or a fraction in (0, 1)");
  }
  options.garbage_collection_threshold = garbage_collection_threshold;
  options.expandable_segments = expandable_segments;
  return options;
}

std::string CachingOptions::AllocatorConf() const {
  std::string conf;
  auto add = [&conf](const std::string& key, const std::string& value) {
    conf += (conf.empty() ? "" : ",") + key + ":" + value;
  };
  if (max_split_size != SIZE_MAX) add("max_split_size_mb", std::to_string(max_split_size >> 20));
  if (roundup_power2_divisions != 0) {
    add("roundup_power2_divisions", std::to_string(roundup_power2_divisions));
  }
  if (garbage_collection_threshold > 0.0) {
    std::ostringstream threshold;
    threshold << garbage_collection_threshold;  // shortest form: 0.6, not 0.600000
    add("garbage_collection_threshold", threshold.str());
  }
  if (expandable_segments) add("expandable_segments", "True");
  return conf;
}

size_t CachingOptions::RoundSize(size_t nbytes) const {
  if (nbytes < kMinBlockSize) return kMinBlockSize;
  const auto divisions = static_cast<uint64_t>(roundup_power2_divisions);
  if (divisions > 0 && nbytes > kMinBlockSize * divisions) {
    // Division steps of at least 512 bytes, so the result stays a multiple of 512.
    return RoundUpPower2Division(nbytes, divisions);
  }
  return kMinBlockSize * ((nbytes + kMinBlockSize - 1) / kMinBlockSize);
}

size_t SegmentSize(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

}  // namespace memsweep::plugins
