#include "core/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "kernels/backend.h"
#include "kernels/tensor.h"
#include "system/error.h"
#include "system/file_identity.h"
#include "system/file_io.h"
#include "system/json_text.h"

namespace lact {

namespace {

size_t dtype_size(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu, bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exponent = 127 - 15 + 1;
      while (!(mantissa & 0x400u)) mantissa <<= 1, --exponent;
      bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even; a finite value never becomes infinite (the largest bf16 instead), NaN stays NaN.
uint16_t float_to_bfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  if ((bits & 0x7fffffffu) == 0x7f800000u) return static_cast<uint16_t>(bits >> 16);
  const uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  if ((rounded & 0x7f800000u) == 0x7f800000u) return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7f7fu);
  return static_cast<uint16_t>(rounded >> 16);
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// No NaN or infinity among `count` floats: the exponent bits all ones. Branch-free over blocks so that the
// compiler vectorises it (the check reads every weight of a model: memory speed, not one compare a value).
bool all_finite(const float* values, size_t count) {
  constexpr size_t kBlock = 4096;
  for (size_t begin = 0; begin < count; begin += kBlock) {
    const size_t end = std::min(count, begin + kBlock);
    uint32_t bad = 0;
    for (size_t i = begin; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, values + i, 4);
      bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    }
    if (bad) return false;
  }
  return true;
}

}  // namespace

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the Python library's own limit

uint64_t element_count(const std::vector<int64_t>& shape, const std::string& path, const std::string& name) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(path, "tensor '" + name + "' has a negative dimension");
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count))
      throw Error(path, "tensor '" + name + "' has a shape whose element count overflows");
  }
  return count;
}

SafetensorsEntry parse_entry(const nlohmann::json& value, const std::string& path, const std::string& name) {
  SafetensorsEntry e;
  try {
    e.dtype = value.at("dtype").get<std::string>();
    const nlohmann::json& shape = value.at("shape");
    const nlohmann::json& offsets = value.at("data_offsets");
    if (!shape.is_array() || !offsets.is_array() || offsets.size() != 2)
      throw Error(path, "tensor '" + name + "' has a malformed header entry");
    for (const nlohmann::json& d : shape) {
      if (!d.is_number_integer()) throw Error(path, "tensor '" + name + "' has a non-integer dimension");
      e.shape.push_back(d.get<int64_t>());
    }
    for (const nlohmann::json& o : offsets)
      if (!o.is_number_unsigned()) throw Error(path, "tensor '" + name + "' has bad data_offsets");
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
  } catch (const nlohmann::json::exception&) {
    throw Error(path, "tensor '" + name + "' has a malformed header entry");
  }
  const uint64_t count = element_count(e.shape, path, name);
  const size_t element = dtype_size(e.dtype);
  if (element == 0) throw Error(path, "tensor '" + name + "' has unknown dtype " + e.dtype);
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(count, static_cast<uint64_t>(element), &bytes) || e.end < e.begin ||
      e.end - e.begin != bytes)
    throw Error(path, "tensor '" + name + "' data size does not match its shape and dtype");
  return e;
}

// The tensors' bytes tile the data section exactly, as the Python library checks: no two share bytes (a crafted
// file could alias one tensor's data into another's), and none lie between tensors or after the last (a hole or
// a tail is a file cut and pasted together, or damaged, that would otherwise load as if whole).
void check_data_layout(const std::string& path, const std::map<std::string, SafetensorsEntry>& entries,
                       uint64_t data_size) {
  struct Range {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Range> ranges;
  for (const auto& [name, e] : entries)
    if (e.end > e.begin) ranges.push_back({e.begin, e.end, &name});
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  uint64_t covered = 0;
  const std::string* previous = nullptr;
  for (const Range& r : ranges) {
    if (r.begin < covered) throw Error(path, "tensors have overlapping data_offsets");
    if (r.begin > covered)
      throw Error(path, "bytes " + std::to_string(covered) + ".." + std::to_string(r.begin) +
                            " of the data section belong to no tensor (a hole " +
                            (previous ? "between tensors '" + *previous + "' and '" : "before tensor '") + *r.name +
                            "'): the file is damaged or was not written by a safetensors writer");
    covered = r.end, previous = r.name;
  }
  if (covered < data_size)
    throw Error(path, std::to_string(data_size - covered) +
                          " bytes follow the last tensor's data (the data section is " + std::to_string(data_size) +
                          " bytes, the tensors take " + std::to_string(covered) +
                          "): the file is damaged or has something appended");
}

// JSON text holds no control byte but tab, line feed and carriage return, in strings or out (writers pad with
// spaces). One there means the length in the first 8 bytes reaches into the tensor data (a damaged or foreign
// file): named as such, not as whatever the JSON parser or the nesting bound makes of the binary bytes.
void check_header_is_text(const std::string& path, const std::string& header) {
  for (size_t i = 0; i < header.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(header[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
      throw Error(path, "corrupt safetensors header: byte " + std::to_string(i) + " of its " +
                            std::to_string(header.size()) +
                            " is binary, not JSON text (the header length in the first 8 bytes is wrong, or this is "
                            "not a safetensors file)");
  }
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  require_regular_file(path);
  file_ = MappedFile::open(path);
  const uint64_t file_size = file_->size();
  if (file_size < 8) throw Error(path, "not a safetensors file (shorter than its 8-byte header length)");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | file_->data()[i];
  if (header_size > file_size - 8)
    throw Error(path, "truncated or not a safetensors file (header of " + std::to_string(header_size) +
                          " bytes in a file of " + std::to_string(file_size) + ")");
  if (header_size > kMaxHeaderBytes) throw Error(path, "safetensors header larger than 100 MiB (refused)");
  const std::string header(reinterpret_cast<const char*>(file_->data()) + 8, header_size);
  check_header_is_text(path, header);
  const nlohmann::json json = parse_json_text(header, path + " (safetensors header)");
  if (!json.is_object()) throw Error(path, "corrupt safetensors header (not a JSON object)");

  const uint64_t data_size = file_size - 8 - header_size;
  for (auto it = json.begin(); it != json.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) throw Error(path, "__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        // Dropping a value of another type would read the file as if the field were absent (an image_size of 64
        // as "no training size"); the format's metadata maps strings to strings.
        if (!m->is_string())
          throw Error(path, "__metadata__ field '" + m.key().substr(0, 60) + "' is a JSON " + m->type_name() +
                                ", not a string (safetensors metadata maps strings to strings)");
        metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    SafetensorsEntry e = parse_entry(*it, path, it.key());
    if (e.end > data_size)
      throw Error(path, "truncated: tensor '" + it.key() + "' ends at byte " + std::to_string(e.end) +
                            " of a data section of " + std::to_string(data_size));
    entries_[it.key()] = std::move(e);
  }
  check_data_layout(path, entries_, data_size);
  data_ = file_->data() + 8 + header_size;
}

std::string SafetensorsFile::content_identity() const { return lact::content_identity(file_->data(), file_->size()); }

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw Error(path_, "missing tensor '" + name + "'");
  return it->second;
}

std::vector<float> SafetensorsFile::read_floats(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  const uint8_t* bytes = data_ + e.begin;
  const size_t n = e.end - e.begin;
  std::vector<float> out;
  if (e.dtype == "F32") {
    out.resize(n / 4);
    std::memcpy(out.data(), bytes, n);
  } else if (e.dtype == "F16" || e.dtype == "BF16") {
    out.resize(n / 2);
    for (size_t i = 0; i < out.size(); ++i) {
      const uint16_t v = static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
      out[i] = e.dtype == "F16" ? half_to_float(v) : bfloat16_to_float(v);
    }
  } else {
    throw Error(path_, "tensor '" + name + "' has dtype " + e.dtype + "; only F32, F16 and BF16 are supported");
  }
  return out;
}

StoredDtype parse_stored_dtype(const std::string& name, const std::string& flag) {
  if (name == "fp32" || name == "f32") return StoredDtype::F32;
  if (name == "bf16") return StoredDtype::BF16;
  throw Error(flag, "'" + name.substr(0, 40) + "' is not fp32 or bf16");
}

void write_safetensors(const std::string& path, const std::map<std::string, SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, StoredDtype dtype) {
  const uint64_t element = dtype == StoredDtype::BF16 ? 2 : 4;
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    uint64_t count = 1;
    for (int64_t d : t.shape) count *= static_cast<uint64_t>(d);
    if (count != t.values.size()) throw Error(path, "tensor '" + name + "' has a shape that does not match its data");
    header[name] = {{"dtype", dtype == StoredDtype::BF16 ? "BF16" : "F32"},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + element * count}}};
    offset += element * count;
  }
  std::string text = header.dump();
  while (text.size() % 8) text.push_back(' ');
  AtomicFile out(path);
  uint8_t prefix[8];
  const uint64_t size = text.size();
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<uint8_t>(size >> (8 * i));
  out.write(prefix, 8);
  out.write(text);
  std::vector<uint8_t> packed;
  for (const auto& [name, t] : tensors) {
    if (dtype == StoredDtype::F32) {
      out.write(t.values.data(), 4 * t.values.size());
      continue;
    }
    packed.resize(2 * t.values.size());
    for (size_t i = 0; i < t.values.size(); ++i) {  // little-endian, as the format says
      const uint16_t v = float_to_bfloat16(t.values[i]);
      packed[2 * i] = static_cast<uint8_t>(v & 0xff), packed[2 * i + 1] = static_cast<uint8_t>(v >> 8);
    }
    out.write(packed.data(), packed.size());
  }
  out.commit();
}

Tensor SafetensorsFile::load_tensor(Backend& be, const std::string& name, const std::vector<int64_t>& shape,
                                    const char* needed_by) const {
  const SafetensorsEntry& e = entry(name);
  uint8_t* bytes = data_ + e.begin;
  if (e.dtype != "F32" || e.shape != shape || reinterpret_cast<uintptr_t>(bytes) % alignof(float) != 0) {
    const std::vector<float> values = read_finite_floats(name, shape, needed_by);  // converted (or refused) once
    return be.from_host(shape, values.data());
  }
  float* values = reinterpret_cast<float*>(bytes);
  const size_t count = (e.end - e.begin) / sizeof(float);
  if (!all_finite(values, count)) throw Error(path_, "tensor '" + name + "' contains NaN or infinite values");
  // In place where the backend computes in host memory: the tensor keeps the mapping alive.
  return be.adopt_host(shape, std::shared_ptr<float>(file_, values));
}

std::vector<float> SafetensorsFile::read_finite_floats(const std::string& name, const std::vector<int64_t>& shape,
                                                       const char* needed_by) const {
  const SafetensorsEntry& e = entry(name);
  if (e.shape != shape)
    throw Error(path_, "tensor '" + name + "' has shape " + shape_string(e.shape) + ", " + needed_by + " needs " +
                           shape_string(shape));
  std::vector<float> values = read_floats(name);
  if (!all_finite(values.data(), values.size()))
    throw Error(path_, "tensor '" + name + "' contains NaN or infinite values");
  return values;
}

}  // namespace lact
