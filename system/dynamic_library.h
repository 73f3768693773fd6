// An optional library opened at run time (dlopen) instead of linked, and its entry points: lact starts without
// it, and pays its load only when asked for it (cuBLAS for --device cuda, NCCL for --distributed nccl).
#pragma once

#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace lact {

class DynamicLibrary {
 public:
  // Opens the first of `candidates` that loads (a soname searched on the library path, or an absolute path);
  // throws std::runtime_error with `hint` and the loader's reason for the first candidate when none does. The
  // library stays loaded for the process.
  DynamicLibrary(const std::vector<std::string>& candidates, const std::string& hint) {
    std::string why;
    for (const std::string& path : candidates) {
      if (path.empty()) continue;
      handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle_) return;
      if (why.empty()) why = dlerror();
    }
    throw std::runtime_error("cannot open " + candidates.front() + " (" + hint + "): " + why);
  }
  // Sets `function` to the entry point `symbol`; throws naming both when the library lacks it.
  template <typename Function>
  void resolve(const char* symbol, Function& function) const {
    function = reinterpret_cast<Function>(dlsym(handle_, symbol));
    if (!function) throw std::runtime_error(std::string("the loaded library has no ") + symbol);
  }

 private:
  void* handle_ = nullptr;
};

}  // namespace lact
