#include "core/cli/count_text.h"

namespace memsweep::cli {

std::string GroupDigits(int64_t n) {
  const std::string digits = std::to_string(n);
  const size_t first = digits[0] == '-' ? 1 : 0;  // the sign is not a digit
  std::string grouped = digits.substr(0, first);
  for (size_t i = first; i < digits.size(); ++i) {
    if (i > first && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return grouped;
}

}  // namespace memsweep::cli
