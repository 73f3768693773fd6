// An MP4 (or any container ffmpeg knows by the extension) from frames streamed to ffmpeg's stdin as raw RGB:
// exactly the frames given, nothing read back from disk, no shell. Written to a temporary file beside `path`
// and renamed over it only when ffmpeg succeeded, so a failure leaves `path` as it was.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/camera.h"
#include "pipeline/subprocess.h"

namespace lact {

class VideoWriter {
 public:
  // Starts ffmpeg for frames of the size of `frames` (which must all share it). Throws Error naming `path`.
  VideoWriter(const std::string& path, const std::vector<Camera>& frames, int fps);
  ~VideoWriter();  // without finish(): stops ffmpeg and removes the temporary file
  void add_frame(const Image& image);
  void finish();  // Error naming the video when ffmpeg failed

 private:
  std::string path_, temp_;
  int width_ = 0, height_ = 0;
  std::unique_ptr<ProgramWithInput> ffmpeg_;
};

}  // namespace lact
