// Counts as the command line prints them: "7,615,616,512" (plan's parameter line, estimate's
// parameter and token columns).
#pragma once

#include <cstdint>
#include <string>

namespace memsweep::cli {

// The decimal digits of `n` in groups of three, separated by commas ("-1,234" for negatives).
std::string GroupDigits(int64_t n);

}  // namespace memsweep::cli
