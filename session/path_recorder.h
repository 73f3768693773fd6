// Recording a camera path in the viewer: keyframes, the path through them (datasets' interpolation: positions
// and intrinsics linear, rotations slerp), playback, and the path file of datasets/camera_path_io.h (what
// `lact path` writes and `lact render --path` reads), in the world of the session's cameras. No window here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/camera.h"
#include "datasets/camera_path_io.h"

namespace lact::session {

// The most frames a recorded path may have (play, save, export). A frame's camera takes sizeof(Camera) (152
// bytes), so the cap's path is about 15 MB of cameras; at 30 fps it plays 55 minutes, and by hand it takes 418 keys at
// the panel's most frames/segment (240). It is also the most `lact path --frames` writes, so any such file loads and
// plays at 1 frame per segment. Before, a long loaded path with a raised frames/segment was interpolated whole and
// could run the viewer out of memory.
constexpr size_t kMaxPathFrames = 100000;

class PathRecorder {
 public:
  void add_key(const Camera& camera) { keys_.push_back(camera); }
  void remove_last();
  void clear();
  const std::vector<Camera>& keys() const { return keys_; }

  // Frames from one key to the next. 1 means the keys are the path (a loaded file is).
  int frames_per_segment = 30;

  // The keys themselves when fewer than two or frames_per_segment is 1, else interpolate_path(keys, n). Error
  // naming frame_count() and kMaxPathFrames when it is over that cap, or the bytes when they do not fit in memory;
  // the keys are unchanged either way.
  std::vector<Camera> path() const;
  // path().size() without building it: the panel shows it every frame (before, it interpolated the whole path per
  // frame, a long loaded path with a raised frames/segment costing seconds a frame).
  size_t frame_count() const;

  // path() as a camera path file that records `world`, the frame the session's cameras are in (its
  // --normalize-poses), so that `lact render --path` refuses it in another frame; Error naming the file.
  void save(const std::string& file, const PathFrame& world) const;
  // Its frames become the keys, 1 frame per segment. Error naming the file, keys unchanged, when it records a
  // frame other than `world` (its cameras would look at nothing here); `state`: the session's state file, if any.
  // Also when a frame's size is not divisible by the model's `patch`, naming the frame, as `lact render --path`
  // refuses it (before, it loaded, and every render of its cameras failed without naming the file).
  void load(const std::string& file, const PathFrame& world, const std::string& state, int patch);

  // Playback at `fps` frames per second from `now` (seconds). Error as path() gives, with nothing changed.
  void play(double now, double fps, bool loop);
  void stop() { playing_ = false; }
  bool playing() const { return playing_; }
  // The frame to show at `now` while playing (stops at the end unless looping); nullopt when not playing.
  std::optional<Camera> frame_at(double now);
  int playing_frame() const { return frame_; }
  int playing_frames() const { return static_cast<int>(playback_.size()); }

 private:
  std::vector<Camera> keys_;
  std::vector<Camera> playback_;
  bool playing_ = false, loop_ = false;
  double start_ = 0, fps_ = 30;
  int frame_ = 0;
};

}  // namespace lact::session
