#include "pipeline/evaluate.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "pipeline/progress.h"
#include "pipeline/video_writer.h"
#include "core/camera_geometry.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/metrics.h"
#include "datasets/camera_path_io.h"
#include "datasets/image_io.h"
#include "datasets/view_selection.h"

namespace lact {

namespace fs = std::filesystem;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

void add_scene_inputs(const SceneSelection& selection, InputFiles& inputs) {
  inputs.add(selection.scene.source);
  for (const SceneView& v : selection.scene.views) inputs.add(v.image_path);
}

SceneReport evaluate_scene(const Model& model, const SceneSelection& selection, const SceneState* given_state,
                           const std::string& targets_spec, uint64_t seed, RunOutput& out) {
  const Scene& scene = selection.scene;
  SceneReport report;
  report.name = scene.name;
  report.folder = out.folder.scene_folder(scene.name);
  report.inputs = selection.inputs;
  report.targets = select_views(targets_spec, scene, true, selection.inputs, seed, "--targets");
  add_scene_inputs(selection, out.inputs);

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
    const std::string stem = report.folder + "/" + std::to_string(v.index);
    write_png(out.folder.file(stem + ".png", out.inputs), images[i]);
    if (out.options.save_images) {
      write_png(out.folder.file(stem + "_gt.png", out.inputs), truth);
      write_png(out.folder.file(stem + "_diff.png", out.inputs), error_heat_map(images[i], truth));
    }
    if (out.options.save_npy) write_npy(out.folder.file(stem + ".npy", out.inputs), images[i]);
  }
  return report;
}

void render_camera_path(const Model& model, const SceneState& state, const std::string& path,
                        const std::string& video, int fps, RunOutput& out) {
  const std::vector<Camera> frames = read_camera_path(path);
  std::set<std::pair<int, int>> sizes;
  const int patch = model.config().patch_size;
  for (size_t i = 0; i < frames.size(); ++i) {
    const Camera& c = frames[i];
    if (c.height % patch || c.width % patch)
      throw Error(path + " frame " + std::to_string(i), "size " + std::to_string(c.height) + "x" +
                                                          std::to_string(c.width) + " is not divisible by the patch size " +
                                                          std::to_string(patch));
    if (sizes.insert({c.height, c.width}).second) check_memory(model, 1, c.height, c.width, path + ": a frame of");
  }
  std::unique_ptr<VideoWriter> writer;
  if (!video.empty()) {
    if (find_program("ffmpeg").empty())
      std::printf("ffmpeg is not installed (Debian package ffmpeg): no video written\n");
    else
      writer = std::make_unique<VideoWriter>(video, frames, fps);
  }
  Progress progress("frames", static_cast<int>(frames.size()), out.options.quiet);
  const auto start = std::chrono::steady_clock::now();
  constexpr size_t kBatch = 8;  // frames rendered together
  for (size_t begin = 0; begin < frames.size(); begin += kBatch) {
    const std::vector<Camera> batch(frames.begin() + begin, frames.begin() + std::min(frames.size(), begin + kBatch));
    const std::vector<Image> images = model.render(state, batch);
    for (size_t i = 0; i < images.size(); ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "frame_%04zu", begin + i);
      const std::string stem = name;
      write_png(out.folder.file(stem + ".png", out.inputs), images[i]);
      if (out.options.save_npy) write_npy(out.folder.file(stem + ".npy", out.inputs), images[i]);
      write_file_atomically(out.folder.file(stem + ".json", out.inputs), camera_to_json(batch[i]).dump() + "\n");
      if (writer) writer->add_frame(images[i]);
      progress.step(name);
    }
  }
  const double seconds = seconds_since(start);
  std::printf("rendered %zu frames at %dx%d in %.2f s (%.1f ms/frame) -> %s\n", frames.size(), frames[0].height,
              frames[0].width, seconds, 1000.0 * seconds / frames.size(), out.folder.root().c_str());
  if (!writer) return;
  writer->finish();
  std::printf("video -> %s\n", video.c_str());
}

}  // namespace lact
