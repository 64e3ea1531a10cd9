#include "core/results/sqlite_handles.h"

#include <sqlite3.h>

#include <thread>
#include <utility>

#include "core/results/results_error.h"

namespace memsweep::results {
namespace {

// Writers wait this long for another process's transaction to finish before giving up.
constexpr int kBusyTimeoutMs = 30000;

int OpenFlags(SqliteConnection::Access access) {
  switch (access) {
    case SqliteConnection::Access::kReadOnly: return SQLITE_OPEN_READONLY;
    case SqliteConnection::Access::kReadWrite: return SQLITE_OPEN_READWRITE;
    case SqliteConnection::Access::kReadWriteCreate:
      return SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  }
  return SQLITE_OPEN_READONLY;
}

bool IsBlank(const char* sql) {
  for (; *sql != '\0'; ++sql) {
    if (*sql != ' ' && *sql != '\t' && *sql != '\n' && *sql != '\r' && *sql != ';') return false;
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// SqliteStatement

SqliteStatement::SqliteStatement(sqlite3_stmt* statement, std::string database_path,
                                 std::string sql)
    : statement_(statement), database_path_(std::move(database_path)), sql_(std::move(sql)) {}

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : statement_(std::exchange(other.statement_, nullptr)),
      database_path_(std::move(other.database_path_)),
      sql_(std::move(other.sql_)) {}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(statement_); }

void SqliteStatement::Fail(int code, const std::string& what) const {
  sqlite3* db = sqlite3_db_handle(statement_);
  std::string message = what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(code));
  const int primary = code & 0xff;
  const bool content = primary == SQLITE_CONSTRAINT || primary == SQLITE_MISMATCH ||
                       primary == SQLITE_TOOBIG || primary == SQLITE_RANGE;
  throw ResultsError(database_path_, message + " (in: " + sql_ + ")",
                     content ? ResultsError::Kind::kContent : ResultsError::Kind::kDatabase);
}

void SqliteStatement::CheckBind(int code, int index) const {
  if (code != SQLITE_OK) Fail(code, "cannot bind parameter " + std::to_string(index));
}

void SqliteStatement::BindInt64(int index, int64_t value) {
  CheckBind(sqlite3_bind_int64(statement_, index, value), index);
}

void SqliteStatement::BindDouble(int index, double value) {
  CheckBind(sqlite3_bind_double(statement_, index, value), index);
}

void SqliteStatement::BindText(int index, std::string_view value) {
  CheckBind(sqlite3_bind_text64(statement_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                                SQLITE_UTF8),
            index);
}

void SqliteStatement::BindBlob(int index, std::string_view bytes) {
  CheckBind(sqlite3_bind_blob64(statement_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT),
            index);
}

void SqliteStatement::BindNull(int index) {
  CheckBind(sqlite3_bind_null(statement_, index), index);
}

void SqliteStatement::BindOptionalInt64(int index, const std::optional<int64_t>& value) {
  if (!value) return BindNull(index);
  BindInt64(index, *value);
}

void SqliteStatement::BindTextOrNull(int index, std::string_view value) {
  if (value.empty()) return BindNull(index);
  BindText(index, value);
}

bool SqliteStatement::Step() {
  const int code = sqlite3_step(statement_);
  if (code == SQLITE_ROW) return true;
  if (code == SQLITE_DONE) return false;
  Fail(code, "SQL error");
}

void SqliteStatement::Run() {
  while (Step()) {
  }
  Reset();
}

void SqliteStatement::Reset() {
  sqlite3_reset(statement_);
  sqlite3_clear_bindings(statement_);
}

int SqliteStatement::ColumnCount() const { return sqlite3_column_count(statement_); }

std::string SqliteStatement::ColumnName(int column) const {
  const char* name = sqlite3_column_name(statement_, column);
  return name ? name : "";
}

ValueKind SqliteStatement::ColumnKind(int column) const {
  switch (sqlite3_column_type(statement_, column)) {
    case SQLITE_INTEGER: return ValueKind::kInteger;
    case SQLITE_FLOAT: return ValueKind::kReal;
    case SQLITE_TEXT: return ValueKind::kText;
    case SQLITE_BLOB: return ValueKind::kBlob;
    default: return ValueKind::kNull;
  }
}

int64_t SqliteStatement::ColumnInt64(int column) const {
  return sqlite3_column_int64(statement_, column);
}

double SqliteStatement::ColumnDouble(int column) const {
  return sqlite3_column_double(statement_, column);
}

std::string SqliteStatement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(statement_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(statement_, column)));
}

std::string SqliteStatement::ColumnBlob(int column) const {
  const void* bytes = sqlite3_column_blob(statement_, column);
  if (bytes == nullptr) return "";
  return std::string(static_cast<const char*>(bytes),
                     static_cast<size_t>(sqlite3_column_bytes(statement_, column)));
}

std::optional<int64_t> SqliteStatement::ColumnOptionalInt64(int column) const {
  if (ColumnKind(column) == ValueKind::kNull) return std::nullopt;
  return ColumnInt64(column);
}

std::optional<double> SqliteStatement::ColumnOptionalDouble(int column) const {
  if (ColumnKind(column) == ValueKind::kNull) return std::nullopt;
  return ColumnDouble(column);
}

// ---------------------------------------------------------------------------------------------
// SqliteConnection

SqliteConnection::SqliteConnection(const std::string& path, Access access) : path_(path) {
  const int code = sqlite3_open_v2(path.c_str(), &db_, OpenFlags(access), nullptr);
  if (code != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(code);
    sqlite3_close(db_);
    db_ = nullptr;
    throw ResultsError(path_, "cannot open: " + message);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_handler(db_, &SqliteConnection::OnBusy, busy_wait_.get());
}

int SqliteConnection::OnBusy(void* wait, int attempts) {
  auto* busy = static_cast<BusyWait*>(wait);
  const auto now = std::chrono::steady_clock::now();
  if (attempts == 0) busy->started = now;
  if (now - busy->started > std::chrono::milliseconds(kBusyTimeoutMs)) return 0;  // give up
  // Short, varied sleeps: SQLite's own handler backs off to 100 ms, long enough for a writer
  // in a tight loop to take the lock again every time.
  std::this_thread::sleep_for(std::chrono::microseconds(500 + (attempts * 7919) % 2000));
  return 1;
}

SqliteConnection::SqliteConnection(SqliteConnection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      path_(std::move(other.path_)),
      busy_wait_(std::move(other.busy_wait_)) {}

SqliteConnection::~SqliteConnection() { sqlite3_close_v2(db_); }

void SqliteConnection::Execute(const std::string& sql) {
  if (!ExecuteUnlessBusy(sql)) {
    throw ResultsError(path_, std::string(sqlite3_errmsg(db_)) + " (in: " + sql + ")");
  }
}

bool SqliteConnection::ExecuteUnlessBusy(const std::string& sql) {
  char* error = nullptr;
  const int code = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  if (code == SQLITE_OK) return true;
  const std::string message = error ? error : sqlite3_errstr(code);
  sqlite3_free(error);
  const int primary_code = code & 0xFF;
  if (primary_code == SQLITE_BUSY || primary_code == SQLITE_LOCKED) return false;
  throw ResultsError(path_, message + " (in: " + sql + ")");
}

SqliteStatement SqliteConnection::Prepare(const std::string& sql) {
  sqlite3_stmt* statement = nullptr;
  const char* tail = nullptr;
  const int code =
      sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size() + 1), &statement, &tail);
  if (code != SQLITE_OK) {
    throw ResultsError(path_, std::string(sqlite3_errmsg(db_)) + " (in: " + sql + ")");
  }
  SqliteStatement owned(statement, path_, sql);
  if (statement == nullptr) throw ResultsError(path_, "empty SQL statement");
  if (tail != nullptr && !IsBlank(tail)) {
    // The rest may be a comment only: preparing it then yields no statement.
    sqlite3_stmt* next = nullptr;
    sqlite3_prepare_v2(db_, tail, -1, &next, nullptr);
    const bool another_statement = next != nullptr;
    sqlite3_finalize(next);
    if (another_statement) {
      throw ResultsError(path_, "expected one SQL statement, found more (in: " + sql + ")");
    }
  }
  return owned;
}

int64_t SqliteConnection::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

bool SqliteConnection::HoldsADatabase() {
  constexpr const char* kProbe = "SELECT count(*) FROM sqlite_master";
  const int code = sqlite3_exec(db_, kProbe, nullptr, nullptr, nullptr);
  if (code == SQLITE_OK) return true;
  if ((code & 0xFF) == SQLITE_NOTADB) return false;
  throw ResultsError(path_, std::string(sqlite3_errmsg(db_)) + " (in: " + kProbe + ")");
}

int64_t SqliteConnection::IntegerPragma(const std::string& name) {
  SqliteStatement pragma = Prepare("PRAGMA " + name);
  if (!pragma.Step()) throw ResultsError(path_, "PRAGMA " + name + " returned nothing");
  return pragma.ColumnInt64(0);
}

// ---------------------------------------------------------------------------------------------
// ImmediateTransaction

ImmediateTransaction::ImmediateTransaction(SqliteConnection& connection) : connection_(connection) {
  connection_.Execute("BEGIN IMMEDIATE");
}

ImmediateTransaction::~ImmediateTransaction() {
  if (finished_) return;
  try {
    connection_.Execute("ROLLBACK");
  } catch (const ResultsError&) {
    // SQLite may already have rolled back (e.g. after SQLITE_FULL); nothing more to undo.
  }
}

void ImmediateTransaction::Commit() {
  connection_.Execute("COMMIT");
  finished_ = true;
}

namespace {

// PRAGMAs that take an argument and only read (https://sqlite.org/pragma.html).
bool ReadingPragma(const std::string& name) {
  static const char* const kReading[] = {
      "table_info",   "table_xinfo",       "table_list",     "index_list",
      "index_info",   "index_xinfo",       "foreign_key_list", "foreign_key_check",
      "integrity_check", "quick_check",    "function_list",  "pragma_list",
      "collation_list", "compile_options", "database_list",  "module_list"};
  for (const char* reading : kReading) {
    if (name == reading) return true;
  }
  return false;
}

int DenyChangesAuthorizer(void*, int action, const char* first, const char* second, const char*,
                          const char*) {
  switch (action) {
    case SQLITE_ATTACH:
    case SQLITE_DETACH: return SQLITE_DENY;
    case SQLITE_PRAGMA:
      // `first` is the pragma's name, `second` its argument (NULL when it only reads).
      if (second == nullptr || ReadingPragma(first == nullptr ? "" : first)) return SQLITE_OK;
      return SQLITE_DENY;
    default: return SQLITE_OK;
  }
}

}  // namespace

void SqliteConnection::DenyChanges() {
  const int code = sqlite3_set_authorizer(db_, DenyChangesAuthorizer, nullptr);
  if (code != SQLITE_OK) {
    throw ResultsError(path_, std::string("cannot refuse changes: ") + sqlite3_errstr(code));
  }
}

}  // namespace memsweep::results
