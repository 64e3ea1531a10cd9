// The results database schema: an ordered list of migrations, one per schema version. Opening a
// database applies the migrations it lacks (PRAGMA user_version records the version reached);
// a database newer than this binary is refused. docs/results.md describes every table.
//
//   SqliteConnection db(path, SqliteConnection::Access::kReadWriteCreate);
//   MigrateSchema(db, SchemaMigrations(), SchemaViews());  // creates or upgrades to kSchemaVersion
//   CheckSchemaVersion(db, kSchemaVersion);  // read-only openers: refuse older or newer files
#pragma once

#include <cstdint>
#include <vector>

#include "core/results/sqlite_handles.h"

namespace memsweep::results {

// The schema version this binary writes and reads.
inline constexpr int64_t kSchemaVersion = 12;

struct Migration {
  int64_t version;  // the user_version after this step; steps are numbered 1, 2, 3, ...
  const char* sql;  // one or more statements
};

// memsweep's migrations, oldest first; the last one has version kSchemaVersion. They change
// tables only: the views are declared once, as this version has them (SchemaViews).
const std::vector<Migration>& SchemaMigrations();
// Drops and creates every view of the current schema (run_summary): run after migrating.
const char* SchemaViews();

// Applies, in one BEGIN IMMEDIATE transaction, every migration newer than the file's
// user_version, then `views` (when given and anything migrated), then sets user_version to the
// last one. Safe when several processes open the same new file at once: the version is read
// inside the transaction. Throws ResultsError when the file's version is newer than the last
// migration.
void MigrateSchema(SqliteConnection& db, const std::vector<Migration>& migrations,
                   const char* views = nullptr);

// Throws ResultsError when the file's user_version is newer than the last migration, writing
// nothing: read-write openers call it before anything changes the file (its journal mode
// included), so that a newer memsweep's database is left byte for byte as it was.
void RefuseNewerSchema(SqliteConnection& db, const std::vector<Migration>& migrations);

// For read-only openers: throws ResultsError unless the file is at exactly `expected_version`.
void CheckSchemaVersion(SqliteConnection& db, int64_t expected_version);

}  // namespace memsweep::results
