// ResultsError: anything that goes wrong with the results database (cannot open, bad SQL, a
// schema newer than this binary, an unknown experiment). The message names the database file.
//
//   try {
//     ResultsDb db("results/memsweep.db", ResultsDb::Mode::kReadOnly);
//   } catch (const ResultsError& e) {
//     std::cerr << "error: " << e.what() << "\n";  // "results/memsweep.db: no such file ..."
//   }
#pragma once

#include <stdexcept>
#include <string>

namespace memsweep::results {

class ResultsError : public std::runtime_error {
 public:
  ResultsError(const std::string& database_path, const std::string& what)
      : std::runtime_error(database_path + ": " + what) {}
  // `cause`'s message followed by `consequence`: what it meant for the command, what to do.
  ResultsError(const ResultsError& cause, const std::string& consequence)
      : std::runtime_error(std::string(cause.what()) + consequence) {}
};

}  // namespace memsweep::results
