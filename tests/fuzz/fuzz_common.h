// Shared harness for the dataset-reader fuzz targets (libFuzzer).
//
// Each target writes the fuzz input under a per-process temporary folder with the file name its layout
// needs, calls lact::read_scenes, and for scenes that read exercises view selection, the scene summary and
// the camera side of preprocessing. lact::Error is the expected outcome for bad input; any other exception
// is a bug and traps so the fuzzer records the input.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "core/camera.h"
#include "datasets/image_io.h"
#include "datasets/pose_normalization.h"
#include "datasets/preprocess.h"
#include "datasets/scene.h"
#include "datasets/scene_summary.h"
#include "datasets/view_selection.h"
#include "system/error.h"

namespace lact_fuzz {

namespace fs = std::filesystem;

// The per-process folder: $TMPDIR/lact_fuzz_<pid> (removed at exit; a crash leaves it for inspection).
inline const fs::path& work_dir() {
  static const fs::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    fs::path d = fs::path(tmp && *tmp ? tmp : "/tmp") / ("lact_fuzz_" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// LACT_FUZZ_VERBOSE=1: print what each input read to (scenes and views) or the lact::Error it gave.
inline bool verbose() {
  static const bool on = std::getenv("LACT_FUZZ_VERBOSE") != nullptr;
  return on;
}

inline void remove_work_dir() {
  std::error_code ec;
  fs::remove_all(work_dir(), ec);
}

inline void write_file(const fs::path& path, const uint8_t* data, size_t size) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "fuzz harness: cannot write %s\n", path.c_str());
    std::abort();
  }
}

inline void write_file(const fs::path& path, const std::string& text) {
  write_file(path, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

inline void remove_file(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

// Small real PNGs (16x8) where the seeds' frames point, so frames without w/h (LVSM, NeRF-synthetic) can
// read their size and the image loading path runs.
inline void write_images(const fs::path& folder, const std::vector<std::string>& names) {
  lact::Image image{16, 8, std::vector<float>(16 * 8 * 3)};
  for (size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = static_cast<float>(i % 7) / 6.0f;
  for (const std::string& name : names) {
    const fs::path p = folder / name;
    fs::create_directories(p.parent_path());
    lact::write_png(p.string(), image);
  }
}

// Splits the input at each "\n@@\n" into at most `parts` pieces (the last piece keeps any further marker).
inline std::vector<std::string> split_parts(const uint8_t* data, size_t size, size_t parts) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string marker = "\n@@\n";
  std::vector<std::string> out;
  size_t start = 0;
  while (out.size() + 1 < parts) {
    const size_t at = text.find(marker, start);
    if (at == std::string::npos) break;
    out.push_back(text.substr(start, at - start));
    start = at + marker.size();
  }
  out.push_back(text.substr(start));
  return out;
}

// What the CLI does with a scene after reading it, minus the model: selections, summary, working size,
// pose normalisation, target cameras and (for small images) the pixels of a couple of views.
inline void exercise_scene(const lact::Scene& scene) {
  const lact::SceneSummary summary = lact::summarize_scene(scene);
  if (summary.views != static_cast<int>(scene.views.size())) __builtin_trap();

  std::vector<int> inputs;
  for (const char* spec : {"0", "0-1,3", "all", "uniform:2", "random:3", "fold8", "fold8:2"}) {
    try {
      inputs = lact::select_views(spec, scene, false, {}, 7, "--inputs");
    } catch (const lact::Error&) {
    }
  }
  for (const char* spec : {"rest", "fold8", "1,2", "uniform:1", "all"}) {
    try {
      const std::vector<int> targets = lact::select_views(spec, scene, true, inputs, 7, "--targets");
      for (int i : targets)
        if (i < 0 || i >= static_cast<int>(scene.views.size())) __builtin_trap();
    } catch (const lact::Error&) {
    }
  }
  if (inputs.empty()) return;
  for (int i : inputs)
    if (i < 0 || i >= static_cast<int>(scene.views.size())) __builtin_trap();

  try {
    lact::working_size(scene, inputs, lact::ViewLoadOptions{}, 8);
  } catch (const lact::Error&) {
  }
  try {
    std::vector<lact::Camera> reference;
    for (int i : inputs) reference.push_back(scene.views[i].camera);
    const lact::PoseTransform pose = lact::mean_pose_transform(reference);
    for (const lact::SceneView& v : scene.views) lact::apply_pose_transform(pose, v.camera);
  } catch (const lact::Error&) {
  }
  // Cameras at a fixed small working size (the stated sizes are fuzzed, so never allocate from them),
  // then decode up to two input images.
  try {
    lact::load_views(scene, inputs, 8, 16, {1.0f, 1.0f, 1.0f}, false);
  } catch (const lact::Error&) {
  }
  for (size_t k = 0; k < inputs.size() && k < 2; ++k) {
    try {
      lact::load_view(scene.views[inputs[k]], 8, 16, {0.5f, 0.5f, 0.5f});
    } catch (const lact::Error&) {
    }
  }
}

// Runs `f` on one fuzz input: lact::Error is the expected outcome of bad input; any other exception traps so
// the fuzzer records the input.
template <typename F>
void expect_only_lact_errors(F&& f) {
  try {
    f();
  } catch (const lact::Error& e) {
    if (verbose()) std::fprintf(stderr, "lact::Error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz harness: %s escaped (not lact::Error): %s\n", typeid(e).name(), e.what());
    __builtin_trap();
  }
}

// read_scenes(path) and everything after it. lact::Error is expected; anything else traps.
inline void read_and_exercise(const fs::path& path, const lact::ReadOptions& options = {}) {
  try {
    const std::vector<lact::Scene> scenes = lact::read_scenes(path.string(), options);
    if (verbose())
      for (const lact::Scene& scene : scenes)
        std::fprintf(stderr, "read %s: scene %s (%s), %zu views\n", path.c_str(), scene.name.c_str(),
                     scene.layout.c_str(), scene.views.size());
    for (const lact::Scene& scene : scenes) {
      if (scene.views.empty()) {
        std::fprintf(stderr, "fuzz harness: read_scenes returned a scene with no views from %s\n", path.c_str());
        __builtin_trap();
      }
      exercise_scene(scene);
    }
    try {
      lact::select_scene(scenes, "", path.string());
    } catch (const lact::Error&) {
      if (scenes.size() == 1) __builtin_trap();  // the only scene is always selectable without a name
    }
    try {
      lact::select_scene(scenes, scenes.back().name, path.string());
    } catch (const lact::Error&) {
      __builtin_trap();  // a scene's own name always selects it
    }
  } catch (const lact::Error& e) {
    if (verbose()) std::fprintf(stderr, "lact::Error: %s\n", e.what());  // bad input, reported as users see it
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz harness: %s escaped as %s (not lact::Error): %s\n", path.c_str(), typeid(e).name(),
                 e.what());
    __builtin_trap();
  } catch (...) {
    std::fprintf(stderr, "fuzz harness: %s: a non-std exception escaped\n", path.c_str());
    __builtin_trap();
  }
}

}  // namespace lact_fuzz
