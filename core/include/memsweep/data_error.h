// DataError: the exception every problem with the training data is reported with (a file that
// cannot be read, a malformed line, a configuration the data cannot satisfy). Its message says
// where the problem is ("file:line: ...") and what to do about it, so the host shows it to the
// user as it is and stops the cell with exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace memsweep::data {

class DataError : public std::runtime_error {
 public:
  explicit DataError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace memsweep::data
