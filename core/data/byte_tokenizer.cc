#include "core/data/byte_tokenizer.h"

namespace memsweep::data {

std::vector<int32_t> Encode(std::string_view text) {
  std::vector<int32_t> ids;
  ids.reserve(text.size() + 2);
  ids.push_back(kBosId);
  for (char byte : text) ids.push_back(static_cast<int32_t>(static_cast<unsigned char>(byte)));
  ids.push_back(kEosId);
  return ids;
}

std::string Decode(const std::vector<int32_t>& ids) {
  std::string text;
  text.reserve(ids.size());
  for (int32_t id : ids) {
    if (id >= 0 && id <= 255) text.push_back(static_cast<char>(static_cast<unsigned char>(id)));
  }
  return text;
}

}  // namespace memsweep::data
