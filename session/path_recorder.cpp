#include "session/path_recorder.h"

#include <cmath>
#include <new>

#include "core/camera_geometry.h"
#include "datasets/camera_path_io.h"
#include "pipeline/evaluate.h"
#include "pipeline/path_frame.h"
#include "system/error.h"

namespace lact::session {

void PathRecorder::remove_last() {
  if (!keys_.empty()) keys_.pop_back();
}

void PathRecorder::clear() {
  keys_.clear();
  stop();
}

std::vector<Camera> PathRecorder::path() const {
  const size_t frames = frame_count();
  const std::string counted = std::to_string(frames) + " frames (" + std::to_string(keys_.size()) + " keys, " +
                              std::to_string(frames_per_segment) + " frames/segment)";
  if (frames > kMaxPathFrames)
    throw Error("camera path", counted + " is more than the " + std::to_string(kMaxPathFrames) +
                                   " a path may have: lower frames/segment or remove keys");
  try {
    if (keys_.size() < 2 || frames_per_segment <= 1) return keys_;
    return interpolate_path(keys_, frames_per_segment);
  } catch (const std::bad_alloc&) {  // under the cap, but this machine's memory is short
    throw Error("camera path",
                counted + " do not fit in memory (" + std::to_string(frames * sizeof(Camera)) + " bytes of cameras)");
  }
}

size_t PathRecorder::frame_count() const {
  if (keys_.size() < 2 || frames_per_segment <= 1) return keys_.size();
  return (keys_.size() - 1) * static_cast<size_t>(frames_per_segment) + 1;  // the last key closes the path
}

void PathRecorder::save(const std::string& file, const PathFrame& world) const {
  if (keys_.empty()) throw Error(file, "the camera path has no keyframes to save");
  write_camera_path(file, path(), &world);
}

void PathRecorder::load(const std::string& file, const PathFrame& world, const std::string& state, int patch) {
  std::vector<Camera> frames = read_path_frames(file, patch);
  check_path_frame(file, world, state, true);
  if (frames.empty()) throw Error(file, "the camera path has no frames");
  keys_ = std::move(frames);
  frames_per_segment = 1;
  stop();
}

void PathRecorder::play(double now, double fps, bool loop) {
  playback_ = path();
  playing_ = !playback_.empty();
  start_ = now;
  fps_ = fps > 0 ? fps : 30;
  loop_ = loop;
  frame_ = 0;
}

std::optional<Camera> PathRecorder::frame_at(double now) {
  if (!playing_) return std::nullopt;
  long index = static_cast<long>(std::floor((now - start_) * fps_));
  const long count = static_cast<long>(playback_.size());
  if (index < 0) index = 0;
  if (index >= count) {
    if (!loop_) {
      playing_ = false;
      frame_ = static_cast<int>(count - 1);
      return playback_.back();  // end on the last frame
    }
    index %= count;
  }
  frame_ = static_cast<int>(index);
  return playback_[index];
}

}  // namespace lact::session
