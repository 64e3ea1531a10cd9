// SHA-256 (FIPS 180-4), for content hashes that are the same on every machine, e.g. the identity
// of an experiment matrix cell.
//
//   std::string hex = Sha256Hex("abc");  // "ba7816bf8f01cfea414140de5dae2223b00361a3..."
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace memsweep::experiment {

std::array<uint8_t, 32> Sha256(std::string_view data);
// The digest as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

}  // namespace memsweep::experiment
