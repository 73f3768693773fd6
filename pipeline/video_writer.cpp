#include "pipeline/video_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "pipeline/output_files.h"

namespace lact {

namespace fs = std::filesystem;

VideoWriter::VideoWriter(const std::string& path, const std::vector<Camera>& frames, int fps) : path_(path) {
  if (frames.empty()) throw Error(path, "no frames for the video");
  width_ = frames[0].width, height_ = frames[0].height;
  for (const Camera& c : frames)
    if (c.width != width_ || c.height != height_)
      throw Error(path, "the camera path's frames differ in size; a video needs one size");
  if (fps < 1 || fps > 1000) throw Error("--fps", "must be in 1..1000");
  // The temporary keeps the extension: ffmpeg picks the container from it. "file:" makes ffmpeg read the
  // name as a plain file name whatever it holds (no protocol prefix, no option).
  make_parent_folder(path);
  const fs::path p = fs::absolute(path);
  temp_ = (p.parent_path() /
           ("." + p.stem().string().substr(0, 100) + ".tmp-" + std::to_string(getpid()) + p.extension().string()))
              .string();
  std::vector<std::string> argv = {"ffmpeg",
                                   "-loglevel",
                                   "error",
                                   "-f",
                                   "rawvideo",
                                   "-pix_fmt",
                                   "rgb24",
                                   "-s",
                                   std::to_string(width_) + "x" + std::to_string(height_),
                                   "-framerate",
                                   std::to_string(fps),
                                   "-i",
                                   "pipe:0",
                                   "-c:v",
                                   "libx264",
                                   "-pix_fmt",
                                   "yuv420p",
                                   "-vf",
                                   "pad=ceil(iw/2)*2:ceil(ih/2)*2"};
  if (p.extension().empty()) argv.insert(argv.end(), {"-f", "mp4"});
  argv.insert(argv.end(), {"-y", "file:" + temp_});
  ffmpeg_ = std::make_unique<ProgramWithInput>(argv);
}

VideoWriter::~VideoWriter() {
  if (ffmpeg_) ffmpeg_->finish();
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void VideoWriter::add_frame(const Image& image) {
  if (image.width != width_ || image.height != height_) throw Error(path_, "frame of another size");
  std::vector<unsigned char> bytes(image.rgb.size());
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<unsigned char>(std::lround(std::clamp(image.rgb[i], 0.0f, 1.0f) * 255.0f));
  if (!ffmpeg_ || !ffmpeg_->write(bytes.data(), bytes.size()))
    throw Error(path_, "ffmpeg stopped reading frames (it failed to write the video)");
}

void VideoWriter::finish() {
  const int status = ffmpeg_ ? ffmpeg_->finish() : -1;
  ffmpeg_.reset();
  std::error_code ec;
  if (status != 0 || !fs::is_regular_file(temp_, ec) || fs::file_size(temp_, ec) == 0)
    throw Error(path_, "ffmpeg failed to write the video (exit status " + std::to_string(status) + ")");
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) throw Error(path_, "cannot replace the video file");
  temp_.clear();
}

}  // namespace lact
