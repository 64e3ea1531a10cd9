// Writes safetensors files for tests, byte for byte as the format's specification lays them out:
// 8 bytes little-endian header length, the JSON header (padded with spaces to a multiple of 8),
// then every tensor's bytes in order.
#pragma once

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/model/safetensors.h"

namespace memsweep::testing_support {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

inline void WriteSafetensors(const std::string& path, const NamedTensors& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::string data;
  for (const auto& [name, tensor] : tensors) {
    const at::Tensor t = tensor.detach().cpu().contiguous();
    const uint64_t begin = data.size();
    data.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
    header[name] = {{"dtype", model::SafetensorsDtypeName(t.scalar_type())},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {begin, static_cast<uint64_t>(data.size())}}};
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::ofstream out(path, std::ios::binary);
  const uint64_t length = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((length >> (8 * i)) & 0xff));
  out << text << data;
}

}  // namespace memsweep::testing_support
