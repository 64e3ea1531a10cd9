#include "core/model/safetensors.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <tuple>

namespace memsweep::model {

// A read-only mapping of a whole file, unmapped when the last tensor viewing it is gone.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw SafetensorsError(path + ": cannot open (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      throw SafetensorsError(path + ": cannot stat (" + std::strerror(errno) + ")");
    }
    size_ = static_cast<uint64_t>(st.st_size);
    if (size_ > 0) {
      void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) {
        ::close(fd);
        throw SafetensorsError(path + ": cannot map (" + std::strerror(errno) + ")");
      }
      data_ = static_cast<const uint8_t*>(data);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  uint64_t data_start = 0;  // 8 + header length

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

c10::ScalarType SafetensorsDtype(const std::string& name, const std::string& file) {
  if (name == "F32") return c10::kFloat;
  if (name == "BF16") return c10::kBFloat16;
  if (name == "F16") return c10::kHalf;
  if (name == "F64") return c10::kDouble;
  if (name == "I64") return c10::kLong;
  if (name == "I32") return c10::kInt;
  throw SafetensorsError(file + ": tensor dtype \"" + name +
                         "\" is not one memsweep reads (F32, BF16, F16; F64, I64, I32): convert the "
                         "weights to F32, BF16 or F16");
}

const char* SafetensorsDtypeName(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat: return "F32";
    case c10::kBFloat16: return "BF16";
    case c10::kHalf: return "F16";
    case c10::kDouble: return "F64";
    case c10::kLong: return "I64";
    case c10::kInt: return "I32";
    default: return "?";
  }
}

namespace {

using nlohmann::json;

// One tensor's bytes in a file's data: [begin, end).
struct ByteRange {
  uint64_t begin;
  uint64_t end;
  std::string name;
  bool operator<(const ByteRange& other) const {
    return std::tie(begin, end, name) < std::tie(other.begin, other.end, other.name);
  }
};

// Parses one file's header into `entries`, checking every byte range against the file.
std::shared_ptr<MappedFile> ReadHeader(const std::string& path,
                                       std::map<std::string, TensorEntry>& entries,
                                       const std::vector<std::string>* only) {
  auto file = std::make_shared<MappedFile>(path);
  if (file->size() < 8) throw SafetensorsError(path + ": too short to be a safetensors file");
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | file->data()[i];
  if (header_length > file->size() - 8) {
    throw SafetensorsError(path + ": header length " + std::to_string(header_length) +
                           " runs past the end of the file (" + std::to_string(file->size()) +
                           " bytes): the file is truncated or not safetensors");
  }
  file->data_start = 8 + header_length;
  json header;
  try {
    header = json::parse(file->data() + 8, file->data() + 8 + header_length);
  } catch (const json::exception& e) {
    throw SafetensorsError(path + ": the header is not valid JSON (" + e.what() + ")");
  }
  if (!header.is_object()) throw SafetensorsError(path + ": the header is not a JSON object");
  const uint64_t data_size = file->size() - file->data_start;
  std::vector<ByteRange> ranges;  // this file's tensors' data_offsets
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") continue;
    if (only != nullptr && std::find(only->begin(), only->end(), name) == only->end()) continue;
    const auto bad = [&, &name = name](const std::string& what) {
      return SafetensorsError(path + ": tensor \"" + name + "\": " + what);
    };
    if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") ||
        !value.contains("data_offsets")) {
      throw bad("needs dtype, shape and data_offsets");
    }
    TensorEntry entry;
    entry.name = name;
    entry.file = path;
    if (!value.at("dtype").is_string()) throw bad("dtype must be a string such as \"F32\"");
    entry.dtype = SafetensorsDtype(value.at("dtype").get<std::string>(), path);
    int64_t numel = 1;
    for (const json& d : value.at("shape")) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) throw bad("shape must be sizes >= 0");
      entry.shape.push_back(d.get<int64_t>());
      numel *= entry.shape.back();
    }
    const json& offsets = value.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      throw bad("data_offsets must be [begin, end]");
    }
    entry.begin = offsets[0].get<uint64_t>();
    entry.end = offsets[1].get<uint64_t>();
    const uint64_t expected = static_cast<uint64_t>(numel) * c10::elementSize(entry.dtype);
    if (entry.end < entry.begin || entry.end - entry.begin != expected) {
      throw bad("data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
                "] do not hold " + std::to_string(numel) + " " +
                SafetensorsDtypeName(entry.dtype) + " values (" + std::to_string(expected) +
                " bytes)");
    }
    if (entry.end > data_size) {
      throw bad("data_offsets end " + std::to_string(entry.end) + " is past the data (" +
                std::to_string(data_size) + " bytes): the file is truncated");
    }
    if (!entries.emplace(name, entry).second) {
      throw bad("appears in two files (" + entries.at(name).file + ")");
    }
    if (entry.end > entry.begin) ranges.push_back({entry.begin, entry.end, name});
  }
  // Each tensor's bytes are its own (the format's rule: no two tensors share a byte).
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    const ByteRange& before = ranges[i - 1];
    const ByteRange& range = ranges[i];
    if (range.begin < before.end) {
      throw SafetensorsError(path + ": tensors \"" + before.name + "\" [" +
                             std::to_string(before.begin) + ", " + std::to_string(before.end) +
                             ") and \"" + range.name + "\" [" + std::to_string(range.begin) +
                             ", " + std::to_string(range.end) +
                             ") overlap: the header is corrupt; write the file again");
    }
  }
  return file;
}

}  // namespace

const TensorEntry* SafetensorsSet::Find(const std::string& name) const {
  const auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

at::Tensor SafetensorsSet::Read(const TensorEntry& entry) const {
  const std::shared_ptr<MappedFile>& file = files_.at(entry.file);
  void* data = const_cast<uint8_t*>(file->data() + file->data_start + entry.begin);
  std::shared_ptr<MappedFile> keep = file;
  return at::from_blob(
      data, entry.shape, [keep](void*) mutable { keep.reset(); },
      at::TensorOptions().dtype(entry.dtype).device(at::kCPU));
}

std::vector<std::string> SafetensorsSet::Files() const {
  std::vector<std::string> files;
  for (const auto& [path, file] : files_) files.push_back(path);
  return files;
}

SafetensorsSet OpenSafetensors(const std::string& path) {
  namespace fs = std::filesystem;
  std::string target = path;
  if (fs::is_directory(path)) {
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    const fs::path single = fs::path(path) / "model.safetensors";
    if (fs::exists(index)) target = index.string();
    else if (fs::exists(single)) target = single.string();
    else {
      throw SafetensorsError(path + ": no model.safetensors or model.safetensors.index.json in "
                             "the directory (give the weights' file or directory)");
    }
  } else if (!fs::exists(path)) {
    throw SafetensorsError(path + ": no such file (give a .safetensors file, its index or the "
                           "model directory)");
  }
  SafetensorsSet set;
  if (target.size() >= 5 && target.substr(target.size() - 5) == ".json") {
    json index;
    try {
      std::ifstream in(target);
      index = json::parse(in);
    } catch (const json::exception& e) {
      throw SafetensorsError(target + ": not valid JSON (" + e.what() + ")");
    }
    if (!index.contains("weight_map") || !index.at("weight_map").is_object()) {
      throw SafetensorsError(target + ": no \"weight_map\" object (a Hugging Face sharded "
                             "checkpoint's index names each tensor's file)");
    }
    std::map<std::string, std::vector<std::string>> names_of_file;
    for (const auto& [name, file] : index.at("weight_map").items()) {
      if (!file.is_string()) throw SafetensorsError(target + ": weight_map[\"" + name + "\"] is not a file name");
      names_of_file[(fs::path(target).parent_path() / file.get<std::string>()).string()].push_back(name);
    }
    for (const auto& [file, names] : names_of_file) {
      set.files_[file] = ReadHeader(file, set.entries_, &names);
      for (const std::string& name : names) {
        if (set.entries_.count(name) == 0) {
          throw SafetensorsError(target + ": names \"" + name + "\" in " + file +
                                 ", which does not hold it");
        }
      }
    }
    return set;
  }
  set.files_[target] = ReadHeader(target, set.entries_, nullptr);
  return set;
}

}  // namespace memsweep::model
