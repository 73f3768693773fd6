// The one error type users see: "where: what", where is a file (or a flag, or a tensor name).
// The CLI prints it as a single line and exits non-zero.
#pragma once

#include <stdexcept>
#include <string>

namespace lact {

class Error : public std::runtime_error {
 public:
  Error(const std::string& where, const std::string& what) : std::runtime_error(where + ": " + what) {}
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace lact
