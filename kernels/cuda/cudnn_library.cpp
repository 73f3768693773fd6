#include "kernels/cuda/cudnn_library.h"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "kernels/cuda/cudnn_sdpa_plan.h"
#include "system/dynamic_library.h"

#ifndef LACT_CUDNN_PATH
#define LACT_CUDNN_PATH ""
#endif

namespace lact::cuda {

namespace {

constexpr const char* kSoname = "libcudnn.so.9";

std::vector<std::string> glob_paths(const std::string& pattern) {
  std::vector<std::string> paths;
  glob_t found{};
  if (glob(pattern.c_str(), 0, nullptr, &found) == 0)
    for (size_t i = 0; i < found.gl_pathc; ++i) paths.emplace_back(found.gl_pathv[i]);
  globfree(&found);
  return paths;
}

// The file dlopen picked for a handle (for `lact info --devices`).
std::string loaded_path(void* symbol, const std::string& fallback) {
  Dl_info info{};
  if (symbol && dladdr(symbol, &info) && info.dli_fname) return info.dli_fname;
  return fallback;
}

}  // namespace

std::vector<std::string> cudnn_candidates() {
  std::vector<std::string> candidates;
  if (const char* forced = std::getenv("LACT_CUDNN_LIBRARY"); forced && *forced) return {forced};
  candidates.push_back(kSoname);
  if (*LACT_CUDNN_PATH) candidates.push_back(LACT_CUDNN_PATH);
  // PyTorch's nvidia-cudnn wheel: the system's, a virtual environment's and the user's site-packages.
  const char* home = std::getenv("HOME");
  for (const std::string& root : {std::string("/usr/local/lib"), std::string("/usr/lib"), std::string("/opt/conda/lib"),
                                  std::string(home ? home : "/root") + "/.local/lib"})
    for (const char* packages : {"site-packages", "dist-packages"})
      for (const std::string& path : glob_paths(root + "/python3*/" + packages + "/nvidia/cudnn/lib/" + kSoname))
        candidates.push_back(path);
  if (const char* venv = std::getenv("VIRTUAL_ENV"))
    for (const std::string& path :
         glob_paths(std::string(venv) + "/lib/python3*/site-packages/nvidia/cudnn/lib/" + kSoname))
      candidates.push_back(path);
  return candidates;
}

namespace {

// One candidate: loads, has the SDPA operation and every entry point, or throws saying which is missing.
CudnnLibrary open_one(const std::string& candidate, bool* loaded) {
  *loaded = false;
  const DynamicLibrary library({candidate}, "cuDNN 9.13 or later: the cuDNN package, or PyTorch's nvidia-cudnn wheel");
  *loaded = true;
  CudnnLibrary lib;
  decltype(&cudnnGetVersion) get_version = nullptr;
  library.resolve("cudnnGetVersion", get_version);
  lib.version = get_version();
  lib.path = loaded_path(reinterpret_cast<void*>(get_version), candidate);
  // The version first: an old library lacks the SDPA operation whatever symbols it has.
  if (const std::string problem = cudnn_version_problem(lib.version); !problem.empty())
    throw std::runtime_error(lib.path + ": " + problem);
  try {
    library.resolve("cudnnCreate", lib.create);
    library.resolve("cudnnDestroy", lib.destroy);
    library.resolve("cudnnSetStream", lib.set_stream);
    library.resolve("cudnnGetErrorString", lib.error_string);
    library.resolve("cudnnGetLastErrorString", lib.last_error);
    library.resolve("cudnnBackendCreateDescriptor", lib.create_descriptor);
    library.resolve("cudnnBackendDestroyDescriptor", lib.destroy_descriptor);
    library.resolve("cudnnBackendSetAttribute", lib.set_attribute);
    library.resolve("cudnnBackendGetAttribute", lib.get_attribute);
    library.resolve("cudnnBackendFinalize", lib.finalize);
    library.resolve("cudnnBackendExecute", lib.execute);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(lib.path + ": " + e.what());
  }
  return lib;
}

}  // namespace

CudnnLibrary open_cudnn(const std::vector<std::string>& candidates) {
  // A library that loads but is refused (too old, incomplete) says more than one that is not there.
  std::string not_loaded, refused;
  for (const std::string& candidate : candidates) {
    bool loaded = false;
    try {
      return open_one(candidate, &loaded);
    } catch (const std::exception& e) {
      std::string& why = loaded ? refused : not_loaded;
      if (why.empty()) why = e.what();
    }
  }
  if (!refused.empty()) throw std::runtime_error(refused);
  throw std::runtime_error(not_loaded.empty() ? "no cuDNN library to look for" : not_loaded);
}

const CudnnLibrary& cudnn() {
  static std::once_flag once;
  static CudnnLibrary library;
  static std::string failure;
  std::call_once(once, [] {
    try {
      library = open_cudnn(cudnn_candidates());
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw std::runtime_error(failure);
  return library;
}

}  // namespace lact::cuda
