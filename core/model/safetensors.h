// Safetensors files, read without copying: the header (tensor names, dtypes, shapes, byte
// ranges) is parsed and checked against the file's size, the data is memory-mapped, and each
// tensor is a CPU view of the mapping (no allocation through memsweep's tracking allocator, so a
// loaded file is never counted as device memory; docs/models.md). A model directory may hold one
// model.safetensors or shards named by model.safetensors.index.json.
//
// Format (https://huggingface.co/docs/safetensors): 8 bytes little-endian header length N, N
// bytes of JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
// "__metadata__": {...}}, then the data; offsets are relative to the end of the header.
//
//   SafetensorsSet weights = OpenSafetensors("models/qwen");   // dir, index or file
//   const TensorEntry* e = weights.Find("model.norm.weight");
//   at::Tensor view = weights.Read(*e);                        // a view of the mapped file
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace memsweep::model {

class SafetensorsError : public std::runtime_error {
 public:
  explicit SafetensorsError(const std::string& message) : std::runtime_error(message) {}
};

struct TensorEntry {
  std::string name;
  std::string file;  // the file holding it
  c10::ScalarType dtype = c10::kFloat;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range in the file's data section
};

class MappedFile;

// One or more safetensors files as one set of named tensors.
class SafetensorsSet {
 public:
  const TensorEntry* Find(const std::string& name) const;
  const std::map<std::string, TensorEntry>& Entries() const { return entries_; }
  // A CPU tensor viewing the mapped bytes (read-only: copy it before changing it).
  at::Tensor Read(const TensorEntry& entry) const;
  // Every file of the set, for messages.
  std::vector<std::string> Files() const;

 private:
  friend SafetensorsSet OpenSafetensors(const std::string& path);
  std::map<std::string, TensorEntry> entries_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
};

// `path`: a .safetensors file, a model.safetensors.index.json, or a directory holding either.
// Reads and checks the headers; throws SafetensorsError naming the file and the problem.
SafetensorsSet OpenSafetensors(const std::string& path);

// Dtype names of the format that memsweep reads: F32, BF16, F16 for weights; F64, I64, I32
// (reference data).
c10::ScalarType SafetensorsDtype(const std::string& name, const std::string& file);
const char* SafetensorsDtypeName(c10::ScalarType dtype);

}  // namespace memsweep::model
