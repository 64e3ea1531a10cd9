// Byte sizes as people write them ("2GiB", "512 MiB", "1.5GB", "1048576") and as memsweep
// prints them ("1.50 GiB").
//
//   int64_t budget = ParseBytes("2GiB").value();   // 2147483648
//   std::string shown = FormatBytes(budget);       // "2.00 GiB"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep::memory {

// Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB, TB) units, or B / no unit. Case of the
// unit letters is ignored. Returns nullopt for anything else, negative or non-finite values.
std::optional<int64_t> ParseBytes(std::string_view text);

// Binary units with two decimals ("0 B", "512 B", "1.00 KiB", "3.91 GiB").
std::string FormatBytes(int64_t bytes);

}  // namespace memsweep::memory
