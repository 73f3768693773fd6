// safetensors files: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}, "__metadata__": {string: string}}, then the raw data.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/tensor.h"
#include "system/mapped_file.h"

namespace lact {

class Backend;

struct SafetensorsEntry {
  std::string dtype;  // "F32", "F16", "BF16" are readable as float
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
};

class SafetensorsFile {
 public:
  // Maps the file and checks the header against its size (tensors are read when asked for). Throws Error
  // naming the path.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  // The file's content identity (system/file_identity.h), from the mapped bytes.
  std::string content_identity() const;
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  const SafetensorsEntry& entry(const std::string& name) const;  // throws "missing tensor"
  // The tensor converted to float32 (F32, F16 or BF16 in the file).
  std::vector<float> read_floats(const std::string& name) const;
  // The same for a tensor that must have `shape` and hold only finite values (Error naming the file and the
  // tensor otherwise; `needed_by` says who needs the shape: "the config", "the model").
  std::vector<float> read_finite_floats(const std::string& name, const std::vector<int64_t>& shape,
                                        const char* needed_by) const;
  // The same checks, straight into backend memory: an aligned F32 tensor is used in place by a backend that
  // computes in host memory (the tensor keeps the file mapped), anything else converted or copied once.
  Tensor load_tensor(Backend& backend, const std::string& name, const std::vector<int64_t>& shape,
                     const char* needed_by) const;

 private:
  std::string path_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, SafetensorsEntry> entries_;
  std::shared_ptr<MappedFile> file_;  // the whole file, mapped (copy-on-write)
  uint8_t* data_ = nullptr;           // its data section
};

struct SafetensorsTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// How float tensors are stored: F32, or BF16 (round to nearest even; half the bytes, ~3 significant digits).
enum class StoredDtype { F32, BF16 };
StoredDtype parse_stored_dtype(const std::string& name, const std::string& flag);  // "fp32" | "bf16"

// Writes float tensors (names sorted, as the Python library does). Throws Error on I/O failure.
void write_safetensors(const std::string& path, const std::map<std::string, SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, StoredDtype dtype = StoredDtype::F32);

}  // namespace lact
