// Small RAII owners for the sqlite3 C API: a connection, a prepared statement and a
// BEGIN IMMEDIATE transaction that rolls back unless committed. Every failure throws
// ResultsError naming the database file and quoting SQLite's message.
//
//   SqliteConnection db("results/memsweep.db", SqliteConnection::Access::kReadWriteCreate);
//   ImmediateTransaction transaction(db);
//   SqliteStatement insert = db.Prepare("INSERT INTO experiments(name) VALUES (?1)");
//   insert.BindText(1, "quickstart");
//   insert.Run();
//   transaction.Commit();
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace memsweep::results {

// The storage class SQLite reports for one value (sqlite3_column_type).
enum class ValueKind : uint8_t { kNull, kInteger, kReal, kText, kBlob };

class SqliteStatement {
 public:
  SqliteStatement(sqlite3_stmt* statement, std::string database_path, std::string sql);
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&&) = delete;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement();

  // Parameters are numbered from 1, as in "?1".
  void BindInt64(int index, int64_t value);
  void BindDouble(int index, double value);
  void BindText(int index, std::string_view value);
  void BindNull(int index);
  void BindOptionalInt64(int index, const std::optional<int64_t>& value);
  void BindTextOrNull(int index, std::string_view value);  // empty text binds NULL
  void BindBlob(int index, std::string_view bytes);

  // Advances to the next row: true when a row is available, false when done.
  bool Step();
  // Runs a statement that returns no rows.
  void Run();
  // Ready to run again with new bindings.
  void Reset();

  int ColumnCount() const;
  std::string ColumnName(int column) const;
  ValueKind ColumnKind(int column) const;
  int64_t ColumnInt64(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;  // "" for NULL
  std::string ColumnBlob(int column) const;  // the bytes; "" for NULL
  std::optional<int64_t> ColumnOptionalInt64(int column) const;
  std::optional<double> ColumnOptionalDouble(int column) const;

 private:
  [[noreturn]] void Fail(int code, const std::string& what) const;
  void CheckBind(int code, int index) const;

  sqlite3_stmt* statement_;
  std::string database_path_;
  std::string sql_;
};

class SqliteConnection {
 public:
  enum class Access : uint8_t { kReadOnly, kReadWrite, kReadWriteCreate };

  SqliteConnection(const std::string& path, Access access);
  SqliteConnection(SqliteConnection&& other) noexcept;
  SqliteConnection& operator=(SqliteConnection&&) = delete;
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;
  ~SqliteConnection();

  const std::string& path() const { return path_; }
  // Runs one or more statements that return no rows we need.
  void Execute(const std::string& sql);
  // As Execute, but returns false instead of throwing when the database is locked by another
  // connection in a way SQLite's busy handler does not wait for (e.g. two connections switching
  // a new file to WAL at once).
  bool ExecuteUnlessBusy(const std::string& sql);
  // Prepares exactly one statement; anything but whitespace or comments after it is an error.
  SqliteStatement Prepare(const std::string& sql);
  int64_t LastInsertRowId() const;
  // False when the file is not an SQLite database (SQLite reads its header here, and only
  // reads); other failures throw.
  bool HoldsADatabase();
  // Result of a PRAGMA returning one integer, e.g. IntegerPragma("user_version").
  int64_t IntegerPragma(const std::string& name);
  // From now on, statements that would change anything are refused when prepared ("not
  // authorized"), on top of a read-only open and `PRAGMA query_only`: ATTACH and DETACH (no
  // other file is opened, or created), and every PRAGMA that sets a value, `query_only` and
  // `writable_schema` included; PRAGMAs that only read (table_info, index_list, ...) still run.
  void DenyChanges();

 private:
  // When the current wait for a lock started (the busy handler polls every few milliseconds,
  // up to 30 s, so that a waiting process gets the lock between another's transactions).
  struct BusyWait {
    std::chrono::steady_clock::time_point started;
  };
  static int OnBusy(void* wait, int attempts);

  sqlite3* db_ = nullptr;
  std::string path_;
  std::unique_ptr<BusyWait> busy_wait_ = std::make_unique<BusyWait>();
};

// BEGIN IMMEDIATE on construction: takes the write lock at once (waiting up to the connection's
// busy timeout), so the transaction never fails half-way for lack of it. Rolls back in the
// destructor unless Commit() was called.
class ImmediateTransaction {
 public:
  explicit ImmediateTransaction(SqliteConnection& connection);
  ImmediateTransaction(const ImmediateTransaction&) = delete;
  ImmediateTransaction& operator=(const ImmediateTransaction&) = delete;
  ~ImmediateTransaction();

  void Commit();

 private:
  SqliteConnection& connection_;
  bool finished_ = false;
};

}  // namespace memsweep::results
