// Reading one field of a config JSON object strictly: the right type, integers in range, one line naming the
// source when not. Used by the config parser and by every block module's params.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

#include "system/error.h"

namespace lact {

template <typename T>
inline T field(const nlohmann::json& object, const char* key, const std::string& where) {
  if (!object.contains(key)) throw Error(where, std::string("config has no field '") + key + "'");
  const nlohmann::json& value = object.at(key);
  // Integers must be integers in range: nlohmann would truncate 8.5 to 8 and wrap 2^32 + 2 to 2.
  if constexpr (std::is_same_v<T, int>) {
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() ? value.get<uint64_t>() > uint64_t(INT32_MAX)
                                    : value.get<int64_t>() < INT32_MIN || value.get<int64_t>() > INT32_MAX))
      throw Error(where, std::string("config field '") + key + "' is not an integer in the int range");
  }
  try {
    return value.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(where, std::string("config field '") + key + "' has the wrong type");
  }
}

template <typename T>
inline T optional_field(const nlohmann::json& object, const char* key, T fallback, const std::string& where) {
  return object.contains(key) ? field<T>(object, key, where) : fallback;
}

}  // namespace lact
