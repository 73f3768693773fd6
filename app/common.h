// Glue shared by the subcommands: flags every command takes, view selection, loading views.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/camera.h"
#include "datasets/image_io.h"
#include "datasets/scene.h"
#include "kernels/backend.h"

namespace lact::app {

struct CommonOptions {
  int threads = 0;  // 0 = all cores
  std::string backend = "cpu";
};
void add_common_options(CLI::App& command, CommonOptions& options);
std::unique_ptr<Backend> make_backend(const CommonOptions& options);

// "0,1,2" or "0-3,8" -> indices, each checked against `count` views of `where`.
std::vector<int> parse_indices(const std::string& text, int count, const std::string& where, const std::string& flag);
// "HxW" -> {H, W}; empty -> {0, 0}.
std::pair<int, int> parse_size(const std::string& text);

// The chosen views at the working size (the first view's size when `size` is {0, 0}).
std::vector<PosedImage> load_views(const Scene& scene, const std::vector<int>& indices, std::pair<int, int> size,
                                   bool with_images);

}  // namespace lact::app
