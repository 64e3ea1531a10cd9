// Document loading: reads the training text named by a DataConfig (JSONL or plain text) into one
// string per document; problems are reported as DataError (memsweep/data_error.h).
//
//   DataConfig config;
//   config.path = "experiments/data/devils-dictionary.jsonl";
//   config.format = DataFormat::kJsonl;
//   std::vector<std::string> documents = LoadTextDocuments(config);  // 997 documents
//
// DataError messages say where the problem is ("file:line: ...") and what to do about it, so
// they can be shown to the user as they are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsweep/data_config.h"
#include "memsweep/data_error.h"

namespace memsweep::data {

// One document: `text`, after `prompt` when the line is a prompt/completion pair (`prompt` empty
// otherwise).
struct TextDocument {
  std::string prompt;
  std::string text;
};

// Loads every document of `config.path`, keeping a prompt/completion line's two parts apart.
// A JSONL line with string fields "prompt" and "completion" is such a pair; with
// config.train_on == kCompletion every line must be (DataError naming the line otherwise), and
// format kText is refused.
std::vector<TextDocument> LoadDocuments(const DataConfig& config);

// The same documents as whole texts (prompt + completion). Loads every document of
// `config.path`:
//   kJsonl: each non-blank line is one JSON object; the document is its string `text_field`.
//   kText:  documents are runs of lines separated by one or more blank (whitespace-only) lines;
//           a document's lines are joined with '\n'.
// Windows line endings and a leading UTF-8 byte-order mark are tolerated. Throws DataError for a
// missing file, a malformed line (naming its 1-based number), a file without documents, or
// format kTokens (token files hold ids, not text: see LoadTokenFile).
std::vector<std::string> LoadTextDocuments(const DataConfig& config);

// Reads every document of `config.path` as LoadDocuments does, keeping none of them (a corpus is
// checked in its own size of memory, not twice it), and returns how many there are. Throws the
// same DataError LoadDocuments would: a missing file or a directory, a malformed line, no
// documents. `memsweep run` and `plan` check each data source of a plan with it before any cell
// runs.
int64_t CheckDocuments(const DataConfig& config);

}  // namespace memsweep::data
