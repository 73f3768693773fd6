// safetensors files: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}, "__metadata__": {string: string}}, then the raw data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lact {

struct SafetensorsEntry {
  std::string dtype;  // "F32", "F16", "BF16" are readable as float
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
};

class SafetensorsFile {
 public:
  // Reads the whole file and checks the header against the file size. Throws Error naming the path.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  const SafetensorsEntry& entry(const std::string& name) const;  // throws "missing tensor"
  // The tensor converted to float32 (F32, F16 or BF16 in the file).
  std::vector<float> read_floats(const std::string& name) const;
  // The same for a tensor that must have `shape` and hold only finite values (Error naming the file and the
  // tensor otherwise; `needed_by` says who needs the shape: "the config", "the model").
  std::vector<float> read_finite_floats(const std::string& name, const std::vector<int64_t>& shape,
                                        const char* needed_by) const;

 private:
  std::string path_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, SafetensorsEntry> entries_;
  std::vector<uint8_t> data_;
};

struct SafetensorsTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Writes float32 tensors (names sorted, as the Python library does). Throws Error on I/O failure.
void write_safetensors(const std::string& path, const std::map<std::string, SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace lact
