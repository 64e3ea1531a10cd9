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
  // kContent: the database refused what was written (a constraint, a value it cannot hold, a file
  // a result names that is not there) — the data is at fault, not the database, which still
  // takes other writes. kDatabase: anything else (cannot open, disk full, locked, bad SQL).
  enum class Kind : uint8_t { kDatabase, kContent };

  ResultsError(const std::string& database_path, const std::string& what,
               Kind kind = Kind::kDatabase)
      : std::runtime_error(database_path + ": " + what), kind_(kind) {}
  // `cause`'s message followed by `consequence`: what it meant for the command, what to do.
  ResultsError(const ResultsError& cause, const std::string& consequence)
      : std::runtime_error(std::string(cause.what()) + consequence), kind_(cause.kind_) {}

  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

}  // namespace memsweep::results
