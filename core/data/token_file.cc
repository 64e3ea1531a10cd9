#include "core/data/token_file.h"

#include <filesystem>
#include <fstream>
#include <limits>

namespace memsweep::data {

int64_t TokenDtypeBytes(TokenDtype dtype) { return dtype == TokenDtype::kUint16 ? 2 : 4; }

std::vector<int32_t> LoadTokenFile(const std::string& path, TokenDtype dtype) {
  if (path.empty()) throw DataError("[data] path is empty: set [data] path to the token file");
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw DataError(path + ": missing file: check [data] path");
  }
  const int64_t file_bytes = static_cast<int64_t>(std::filesystem::file_size(path, error));
  if (error) throw DataError(path + ": cannot read file size (" + error.message() + ")");
  const int64_t element_bytes = TokenDtypeBytes(dtype);
  if (file_bytes % element_bytes != 0) {
    throw DataError(path + ": size " + std::to_string(file_bytes) + " bytes is not a multiple of " +
                    std::to_string(element_bytes) + " (one " +
                    (dtype == TokenDtype::kUint16 ? "uint16" : "uint32") +
                    " token id): check [data] token_dtype, or whether the file is truncated");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open file for reading: check its permissions");
  std::vector<unsigned char> bytes(static_cast<size_t>(file_bytes));
  if (!in.read(reinterpret_cast<char*>(bytes.data()), file_bytes)) {
    throw DataError(path + ": read error after " + std::to_string(in.gcount()) + " of " +
                    std::to_string(file_bytes) + " bytes");
  }
  const int64_t count = file_bytes / element_bytes;
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  const unsigned char* p = bytes.data();
  if (dtype == TokenDtype::kUint16) {
    for (int64_t i = 0; i < count; ++i, p += 2) {
      tokens[i] = static_cast<int32_t>(p[0] | (p[1] << 8));
    }
  } else {
    for (int64_t i = 0; i < count; ++i, p += 4) {
      const uint32_t id =
          uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
      if (id > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
        throw DataError(path + ": token " + std::to_string(i) + " has id " + std::to_string(id) +
                        ", larger than any vocabulary: check [data] token_dtype");
      }
      tokens[i] = static_cast<int32_t>(id);
    }
  }
  return tokens;
}

void WriteTokenFile(const std::string& path, const std::vector<int32_t>& tokens, TokenDtype dtype) {
  const int64_t element_bytes = TokenDtypeBytes(dtype);
  const int64_t max_id = dtype == TokenDtype::kUint16 ? std::numeric_limits<uint16_t>::max()
                                                      : std::numeric_limits<int32_t>::max();
  std::vector<unsigned char> bytes;
  bytes.reserve(tokens.size() * static_cast<size_t>(element_bytes));
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t id = tokens[i];
    if (id < 0 || id > max_id) {
      throw DataError(path + ": token " + std::to_string(i) + " has id " + std::to_string(id) +
                      ", outside 0.." + std::to_string(max_id) + " for this token dtype");
    }
    const auto value = static_cast<uint32_t>(id);
    for (int64_t b = 0; b < element_bytes; ++b) {
      bytes.push_back(static_cast<unsigned char>((value >> (8 * b)) & 0xFF));
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw DataError(path + ": cannot open file for writing: check the directory exists");
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw DataError(path + ": write error: check free disk space");
}

}  // namespace memsweep::data
