// The layout readers behind read_scenes (datasets/scene.h). Each takes the parsed file.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "datasets/scene.h"

namespace lact {

// LaCT list / Long-LRM dict / LVSM frames (datasets/lact_layout.cpp).
Scene read_lact_camera_file(const std::filesystem::path& path, const nlohmann::json& json);

// nerfstudio / DL3DV / instant-ngp transforms.json and NeRF-synthetic transforms_*.json
// (datasets/transforms_layout.cpp). `split` labels the views ("train", ...; empty for a single file).
Scene read_transforms_file(const std::filesystem::path& path, const nlohmann::json& json, const std::string& split,
                           const ReadOptions& options);

// COLMAP sparse models (datasets/colmap_layout.cpp): whether `path` is a model folder (cameras + images, .bin or
// .txt), a folder holding sparse/0 (or sparse/ holding the model), or one of a model's files; and reading it.
bool is_colmap_path(const std::filesystem::path& path);
Scene read_colmap_scene(const std::filesystem::path& path, const ReadOptions& options);
// For a folder with no model in sparse/0 or sparse: ": sparse/N holds one ..." naming the flags that read the
// first such N, or "".
std::string other_sparse_model(const std::filesystem::path& folder);

}  // namespace lact
