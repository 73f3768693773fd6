// A video (.mp4, .mkv or .mov) from frames streamed to ffmpeg's stdin as raw RGB: exactly the frames given,
// nothing read back from disk, no shell. ffmpeg writes a temporary file beside `path`; only when it exited 0
// and ffprobe counts exactly the frames given in that file is it moved to `path`. Every wait on ffmpeg is
// bounded by a stall timeout (LACT_VIDEO_STALL_SECONDS, 30 s by default): an ffmpeg that stops taking frames
// or never ends is killed. Any failure is one Error naming `path`, with no temporary left and `path` as it was.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/camera.h"
#include "system/subprocess.h"

namespace lact {

// The checks of `--video path` to make before any work: a container known by its extension (.mp4, .mkv,
// .mov, any case), ffmpeg and ffprobe on PATH, and LACT_VIDEO_STALL_SECONDS a number of seconds when set.
// Error naming --video (or the variable).
void check_video_output(const std::string& path);

class VideoWriter {
 public:
  // Starts ffmpeg for frames of the size of `frames` (which must all share it). Throws Error naming `path`.
  // The commit follows system/file_io's rename_into_place: a link is written through, and without --force
  // (check_named_output) a file that appeared at `path` while this run worked is an error, not replaced.
  VideoWriter(const std::string& path, const std::vector<Camera>& frames, int fps);
  ~VideoWriter();  // without finish(): stops ffmpeg and removes the temporary file
  VideoWriter(const VideoWriter&) = delete;
  VideoWriter& operator=(const VideoWriter&) = delete;

  void add_frame(const Image& image);
  // ffmpeg's exit, the frame count of what it wrote, then the move to `path`; Error naming the video.
  void finish();

 private:
  [[noreturn]] void fail_ffmpeg(const std::string& what);
  void check_frame_count() const;
  void commit();
  std::string path_, target_, temp_;  // as given, resolved (links followed), the temporary
  int width_ = 0, height_ = 0;
  int temp_token_ = -1;  // the temporary's registration for the signal cleanup
  size_t frames_written_ = 0;
  double stall_s_ = 30;
  std::unique_ptr<ProgramWithInput> ffmpeg_;
};

}  // namespace lact
