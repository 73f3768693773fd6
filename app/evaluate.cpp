#include "app/evaluate.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app/progress.h"
#include "core/camera_geometry.h"
#include "core/error.h"
#include "core/metrics.h"
#include "datasets/camera_path_io.h"
#include "datasets/image_io.h"
#include "datasets/view_selection.h"

namespace lact::app {

namespace fs = std::filesystem;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

void prepare_output_folder(const std::string& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  const fs::path probe = fs::path(folder) / ".lact_write_test";
  std::ofstream test(probe);
  if (ec || !test) throw Error(folder, "output folder cannot be created or written");
  test.close();
  fs::remove(probe, ec);
}

SceneReport evaluate_scene(const Model& model, const SceneSelection& selection, const SceneState* given_state,
                           const std::string& targets_spec, uint64_t seed, const OutputOptions& out) {
  const Scene& scene = selection.scene;
  SceneReport report;
  report.name = scene.name;
  report.inputs = selection.inputs;
  report.targets = select_views(targets_spec, scene, true, selection.inputs, seed, "--targets");

  const std::vector<PosedImage> inputs =
      selection.inputs.empty() ? std::vector<PosedImage>{} : selected_views(selection, selection.inputs, true);
  SceneState encoded;
  if (!given_state) {
    const auto start = std::chrono::steady_clock::now();
    encoded = model.encode(inputs);
    report.encode_s = seconds_since(start);
  }
  const SceneState& state = given_state ? *given_state : encoded;

  // Targets with their ground truth (a dataset's targets have images).
  const std::vector<PosedImage> targets = selected_views(selection, report.targets, true);
  std::vector<Camera> cameras;
  for (const PosedImage& t : targets) cameras.push_back(t.camera);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Image> images = model.render(state, cameras);
  report.render_ms_per_view = 1000.0 * seconds_since(start) / std::max<size_t>(1, images.size());

  std::vector<Camera> input_cameras;
  for (const PosedImage& v : inputs) input_cameras.push_back(v.camera);
  const fs::path folder = fs::path(out.folder) / scene.name;
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error(folder.string(), "cannot create output folder (" + ec.message() + ")");
  for (size_t i = 0; i < images.size(); ++i) {
    ViewReport v;
    v.index = report.targets[i];
    const Image& truth = targets[i].image;
    v.mse = mean_squared_error(images[i], truth);
    v.psnr = psnr_from_mse(v.mse);
    v.ssim = ssim(images[i], truth);
    v.psnr_white = psnr(Image{truth.width, truth.height, std::vector<float>(truth.rgb.size(), 1.0f)}, truth);
    if (!inputs.empty()) {
      const int nearest = nearest_camera(input_cameras, targets[i].camera);
      v.nearest_input = selection.inputs[nearest];
      v.psnr_nearest_input = psnr(inputs[nearest].image, truth);
    }
    report.views.push_back(v);
    const std::string stem = (folder / std::to_string(v.index)).string();
    write_png(stem + ".png", images[i]);
    if (out.save_images) {
      write_png(stem + "_gt.png", truth);
      write_png(stem + "_diff.png", error_heat_map(images[i], truth));
    }
    if (out.save_npy) write_npy(stem + ".npy", images[i]);
  }
  return report;
}

void render_camera_path(const Model& model, const SceneState& state, const std::string& path,
                        const OutputOptions& out, const std::string& video, int fps) {
  const std::vector<Camera> frames = read_camera_path(path);
  prepare_output_folder(out.folder);
  Progress progress("frames", static_cast<int>(frames.size()), out.quiet);
  const auto start = std::chrono::steady_clock::now();
  constexpr size_t kBatch = 8;  // frames rendered together
  for (size_t begin = 0; begin < frames.size(); begin += kBatch) {
    const std::vector<Camera> batch(frames.begin() + begin, frames.begin() + std::min(frames.size(), begin + kBatch));
    const std::vector<Image> images = model.render(state, batch);
    for (size_t i = 0; i < images.size(); ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "frame_%04zu", begin + i);
      const std::string stem = (fs::path(out.folder) / name).string();
      write_png(stem + ".png", images[i]);
      if (out.save_npy) write_npy(stem + ".npy", images[i]);
      std::ofstream pose(stem + ".json");
      pose << camera_to_json(batch[i]).dump() << "\n";
      progress.step(name);
    }
  }
  const double seconds = seconds_since(start);
  std::printf("rendered %zu frames at %dx%d in %.2f s (%.1f ms/frame) -> %s\n", frames.size(), frames[0].height,
              frames[0].width, seconds, 1000.0 * seconds / frames.size(), out.folder.c_str());
  if (video.empty()) return;
  if (std::system("command -v ffmpeg >/dev/null 2>&1") != 0) {
    std::printf("ffmpeg is not installed (Debian package ffmpeg): no video written\n");
    return;
  }
  const std::string command = "ffmpeg -loglevel error -y -framerate " + std::to_string(fps) + " -i '" +
                              (fs::path(out.folder) / "frame_%04d.png").string() +
                              "' -c:v libx264 -pix_fmt yuv420p -vf 'pad=ceil(iw/2)*2:ceil(ih/2)*2' '" + video + "'";
  if (std::system(command.c_str()) != 0) throw Error(video, "ffmpeg failed to write the video");
  std::printf("video -> %s\n", video.c_str());
}

}  // namespace lact::app
