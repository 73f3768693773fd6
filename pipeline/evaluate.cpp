#include "pipeline/evaluate.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "core/camera_geometry.h"
#include "core/error_scale_bar.h"
#include "core/metrics.h"
#include "datasets/camera_path_io.h"
#include "datasets/image_io.h"
#include "datasets/view_selection.h"
#include "pipeline/output_ownership.h"
#include "pipeline/progress.h"
#include "pipeline/video_writer.h"
#include "system/clock.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/signal_cleanup.h"

namespace lact {

namespace fs = std::filesystem;

void add_scene_inputs(const SceneSelection& selection, InputFiles& inputs) {
  inputs.add(selection.scene.source);
  for (const SceneView& v : selection.scene.views) inputs.add(v.image_path);
}

namespace {

// The PSNR (and with --lpips the LPIPS) of the input view nearest each target (the "copy the closest photo"
// baseline). The input images the encode read (`loaded`: selection.inputs from position `first` on, alive as long
// as this) are used in place, not copied (a copy of each was an evaluation's largest host buffer after the
// targets); others are read once.
class NearestInputs {
 public:
  NearestInputs(const SceneSelection& selection, const std::vector<PosedImage>& loaded, size_t first)
      : selection_(selection), loaded_(loaded), first_(first) {
    for (const PosedImage& v : selected_views(selection, selection.inputs, false)) cameras_.push_back(v.camera);
  }
  void measure(const Camera& target, const Image& truth, ViewReport& v, const Lpips* lpips,
               const Lpips::Features* truth_features) {
    if (cameras_.empty()) return;
    const int nearest = nearest_camera(cameras_, target);
    v.nearest_input = selection_.inputs[nearest];
    const Image& image = input_image(nearest, v.nearest_input);
    v.psnr_nearest_input = psnr(image, truth);
    if (lpips) v.lpips_nearest_input = lpips->distance(lpips->features(image), *truth_features);
  }

 private:
  // The image of selection.inputs[position] (view `index`): the loaded one, else read once and kept.
  const Image& input_image(int position, int index) {
    const size_t at = static_cast<size_t>(position);
    if (at >= first_ && at - first_ < loaded_.size()) return loaded_[at - first_].image;
    auto found = read_.find(position);
    if (found == read_.end()) found = read_.emplace(position, read_checked_views(selection_, {index})[0].image).first;
    return found->second;
  }

  const SceneSelection& selection_;
  const std::vector<PosedImage>& loaded_;
  const size_t first_;
  std::vector<Camera> cameras_;
  std::map<int, Image> read_;  // the nearest inputs the encode did not read
};

// The names view_output_names lists (pipeline/output_ownership.h), checked before any work: change both together.
void write_view_images(const Image& image, const Image& truth, const std::string& stem, RunOutput& out) {
  write_png(out.folder.file(stem + ".png", out.inputs), image);
  if (out.options.save_images) {
    write_png(out.folder.file(stem + "_gt.png", out.inputs), truth);
    write_png(out.folder.file(stem + "_diff.png", out.inputs), with_error_scale_bar(error_heat_map(image, truth)));
  }
  if (out.options.save_npy) write_npy(out.folder.file(stem + ".npy", out.inputs), image);
}

// A target's scores against its truth (and the nearest input's): the render clamped to [0, 1] as measured.
ViewReport measure_view(int index, const Image& image, const PosedImage& target, NearestInputs& nearest,
                        const Lpips* lpips) {
  ViewReport v;
  v.index = index;
  const Image& truth = target.image;
  v.mse = mean_squared_error(image, truth);
  v.psnr = psnr_from_mse(v.mse);
  v.ssim = ssim(image, truth);
  v.psnr_white = psnr(Image{truth.width, truth.height, std::vector<float>(truth.rgb.size(), 1.0f)}, truth);
  Lpips::Features truth_features;  // the target's, computed once for the render and the nearest input
  if (lpips) {
    truth_features = lpips->features(truth);
    v.lpips = lpips->distance(lpips->features(image), truth_features);
  }
  nearest.measure(target.camera, truth, v, lpips, &truth_features);
  return v;
}

// The batches Model::render makes of `targets` (consecutive views of one size, Model::render_batch_views
// at a time): rendered one call each, each view's pixels are those of one call over all the targets, so a
// resumed scene's views equal an uninterrupted run's whatever the backend's GEMMs do with another batch.
std::vector<std::pair<size_t, size_t>> target_batches(const Model& model, const std::vector<PosedImage>& targets) {
  std::vector<std::pair<size_t, size_t>> batches;
  for (size_t begin = 0; begin < targets.size();) {
    const Camera& c = targets[begin].camera;
    const size_t most = static_cast<size_t>(model.render_batch_views(c.height, c.width));
    size_t end = begin + 1;
    while (end < targets.size() && end - begin < most && targets[end].camera.height == c.height &&
           targets[end].camera.width == c.width)
      ++end;
    batches.emplace_back(begin, end);
    begin = end;
  }
  return batches;
}

std::vector<ViewReport> in_target_order(const std::map<int, ViewReport>& measured, const std::vector<int>& targets) {
  std::vector<ViewReport> views;
  for (int index : targets) {
    const auto found = measured.find(index);
    if (found != measured.end()) views.push_back(found->second);
  }
  return views;
}

}  // namespace

std::vector<int> nearest_inputs_to_read(const SceneSelection& selection, const std::vector<int>& targets, size_t first,
                                        size_t loaded) {
  std::vector<Camera> inputs;
  for (const PosedImage& v : selected_views(selection, selection.inputs, false)) inputs.push_back(v.camera);
  std::set<int> read;
  if (inputs.empty()) return {};
  for (const PosedImage& t : selected_views(selection, targets, false)) {
    const size_t nearest = static_cast<size_t>(nearest_camera(inputs, t.camera));
    if (nearest < first || nearest >= first + loaded) read.insert(selection.inputs[nearest]);
  }
  return {read.begin(), read.end()};
}

std::vector<ViewReport> render_and_measure(const Model& model, const SceneSelection& selection, const SceneState& state,
                                           const std::vector<int>& indices, const std::vector<PosedImage>& loaded,
                                           size_t first, const std::string& folder, RunOutput& out, RenderTime& time,
                                           const Lpips* lpips, const ViewsKept& kept) {
  NearestInputs nearest(selection, loaded, first);
  std::map<int, ViewReport> measured;  // by view index: the kept ones, then each one written
  for (const ViewReport& v : kept.done) measured[v.index] = v;
  const std::vector<PosedImage> cameras = selected_views(selection, indices, false);
  std::vector<std::pair<size_t, size_t>> batches;  // those to render: any view in them not kept
  std::vector<int> reads;
  for (const auto& [begin, end] : target_batches(model, cameras)) {
    bool all_kept = true;
    for (size_t i = begin; i < end; ++i) all_kept = all_kept && measured.count(indices[i]);
    if (all_kept) continue;
    batches.emplace_back(begin, end);
    reads.insert(reads.end(), indices.begin() + begin, indices.begin() + end);
  }
  const std::vector<PosedImage> targets = read_checked_views(selection, reads);  // all before any render
  size_t read = 0;
  bool writing = false;
  for (const auto& [begin, end] : batches) {
    std::vector<Camera> batch;
    for (size_t i = begin; i < end; ++i) batch.push_back(cameras[i].camera);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<Image> images = model.render(state, batch);
    time.seconds += seconds_since(start);
    time.views += images.size();
    for (size_t i = 0; i < images.size(); ++i)  // the whole batch before any of it is written
      check_rendered_image(images[i], selection.scene.source + " view " + std::to_string(indices[begin + i]));
    const size_t first_read = read;  // targets[first_read + i] is images[i]'s truth
    read += images.size();
    std::vector<std::pair<size_t, ViewReport>> batch_views;  // (i, its report), measured before any is written
    for (size_t i = 0; i < images.size(); ++i)
      if (!measured.count(indices[begin + i]))  // a kept one's files are in place
        batch_views.emplace_back(i,
                                 measure_view(indices[begin + i], images[i], targets[first_read + i], nearest, lpips));
    // The batch's images and the record naming them land together: a signal waits for both, so no image is left
    // that the interrupt note and --resume do not know of (the first batch's were left unrecorded while the note
    // said "nothing kept"). The section holds file writes only, the measuring is done.
    const SignalsHeld held;
    if (!writing && kept.before_writing) kept.before_writing();
    writing = true;
    for (const auto& [i, v] : batch_views) {
      write_view_images(images[i], targets[first_read + i].image, folder + "/" + std::to_string(v.index), out);
      measured[v.index] = v;
    }
    if (kept.after_batch) kept.after_batch(in_target_order(measured, indices));
  }
  return in_target_order(measured, indices);
}

std::vector<Camera> read_path_frames(const std::string& path, int patch) {
  std::vector<Camera> frames = read_camera_path(path);
  for (size_t i = 0; i < frames.size(); ++i) {
    const Camera& c = frames[i];
    if (c.height % patch || c.width % patch)
      throw Error(path + " frame " + std::to_string(i),
                  "size " + std::to_string(c.height) + "x" + std::to_string(c.width) +
                      " is not divisible by the patch size " + std::to_string(patch));
  }
  return frames;
}

void render_frames(const Model& model, const SceneState& state, const std::string& path,
                   const std::vector<Camera>& frames, const std::string& video, int fps, RunOutput& out) {
  std::unique_ptr<VideoWriter> writer;  // ffmpeg and the container were checked before any work
  if (!video.empty()) writer = std::make_unique<VideoWriter>(video, frames, fps);
  Progress progress("frames", static_cast<int>(frames.size()), out.options.quiet);
  const auto start = std::chrono::steady_clock::now();
  for (size_t begin = 0; begin < frames.size(); begin += kPathFramesPerCall) {
    const std::vector<Camera> batch(frames.begin() + begin,
                                    frames.begin() + std::min(frames.size(), begin + kPathFramesPerCall));
    const std::vector<Image> images = model.render(state, batch);
    for (size_t i = 0; i < images.size(); ++i)
      check_rendered_image(images[i], path + " frame " + std::to_string(begin + i));
    for (size_t i = 0; i < images.size(); ++i) {
      const std::string stem = path_frame_stem(begin + i);
      write_png(out.folder.file(stem + ".png", out.inputs), images[i]);
      if (out.options.save_npy) write_npy(out.folder.file(stem + ".npy", out.inputs), images[i]);
      write_file_atomically(out.folder.file(stem + ".json", out.inputs), camera_to_json(batch[i]).dump() + "\n");
      if (writer) writer->add_frame(images[i]);
      progress.step(stem);
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
