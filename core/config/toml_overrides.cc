#include "core/config/toml_overrides.h"

#include <string>
#include <string_view>

#include "core/config/config_error.h"
#include "core/config/dotted_keys.h"

namespace memsweep::config {
namespace {

// The offset of the first byte that is not part of well-formed UTF-8 (no overlong forms, no
// surrogates, nothing above U+10FFFF), or npos.
size_t FirstInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&text](size_t at) { return static_cast<unsigned char>(text[at]); };
    const unsigned char lead = byte(i);
    size_t length = 1;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return i;
    }
    if (i + length > text.size() || byte(i + 1) < low || byte(i + 1) > high) return i;
    for (size_t k = 2; k < length; ++k) {
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

// `text` with every byte outside printable ASCII written as \xHH, for a message.
std::string Printable(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7F) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}

}  // namespace

// Applies "section.key=value" on top of the parsed file.
void ApplyOverride(toml::table& root, const std::string& assignment) {
  // Keys and bare words go into the document as they are; TOML (and every file memsweep writes
  // from it) is UTF-8.
  if (const size_t bad = FirstInvalidUtf8(assignment); bad != std::string_view::npos) {
    throw ConfigError("--set " + Printable(assignment) + ": not valid UTF-8 (byte " +
                      std::to_string(bad + 1) + "); write keys and values in UTF-8");
  }
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("--set " + assignment + ": expected section.key=value");
  }
  const std::string dotted = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  if (dotted.find('.') == std::string::npos) {
    throw ConfigError("--set " + assignment +
                      ": the key must name its section, e.g. strategies.batching.seq_len=128");
  }
  toml::table parsed;
  try {
    parsed = toml::parse("v = " + value, std::string_view("--set " + dotted));
  } catch (const toml::parse_error&) {
    parsed = toml::table{{"v", value}};  // a bare word: take it as a string
  }
  // A copy, which has no file position: messages about the value name the experiment file.
  toml::table copy = parsed;
  AssignAtPath(root, dotted, std::move(*copy.get("v")), {}, "--set " + assignment);
}

}  // namespace memsweep::config
