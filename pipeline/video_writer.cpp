#include "pipeline/video_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "system/error.h"
#include "system/file_io.h"
#include "system/output_files.h"
#include "system/signal_cleanup.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStallVariable = "LACT_VIDEO_STALL_SECONDS";

// The containers lact writes on purpose: ffmpeg picks the container from the extension, and each of these
// holds H.264 in yuv420p.
bool known_container(const std::string& extension) {
  std::string lower = extension;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == ".mp4" || lower == ".mkv" || lower == ".mov";
}

// Seconds without progress before ffmpeg is stopped: LACT_VIDEO_STALL_SECONDS when set (0.1 to a day).
double stall_seconds() {
  const char* text = std::getenv(kStallVariable);
  if (!text) return 30;
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !std::isfinite(s) || s < 0.1 || s > 86400)
    throw Error(kStallVariable, "must be a number of seconds in 0.1..86400, not '" + std::string(text) + "'");
  return s;
}

// A new, empty temporary file beside `path` that keeps the extension (ffmpeg picks the container from it):
// hidden, unique, created exclusively (nothing that exists is ever truncated) and registered first, so a signal
// from then on removes it. Returns its name; `token` is its registration.
std::string create_temporary_beside(const std::string& path, int& token) {
  const fs::path p = fs::absolute(path);
  const std::string stem = "." + p.stem().string().substr(0, 100) + ".tmp-" + std::to_string(::getpid()) + "-";
  std::random_device random;
  int error = 0;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string name =
        (p.parent_path() / (stem + std::to_string(random() % 1000000) + p.extension().string())).string();
    token = register_temporary(name);
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return name;
    }
    error = errno;
    unregister_temporary(token);
    token = -1;
    if (error != EEXIST) break;
  }
  throw Error(path, std::string("cannot create a temporary file beside it (") + std::strerror(error) + ")");
}

std::vector<std::string> ffmpeg_arguments(int width, int height, int fps, const std::string& temp) {
  // "file:" makes ffmpeg read the name as a plain file name whatever it holds (no protocol prefix, no option).
  return {"ffmpeg",
          "-nostdin",
          "-hide_banner",
          "-loglevel",
          "error",
          "-f",
          "rawvideo",
          "-pix_fmt",
          "rgb24",
          "-s",
          std::to_string(width) + "x" + std::to_string(height),
          "-framerate",
          std::to_string(fps),
          "-i",
          "pipe:0",
          "-c:v",
          "libx264",
          "-pix_fmt",
          "yuv420p",
          "-vf",
          "pad=ceil(iw/2)*2:ceil(ih/2)*2",
          "-y",
          "file:" + temp};
}

std::string quoted_tail(const std::string& line) { return line.empty() ? "" : ": " + line; }

}  // namespace

void check_video_output(const std::string& path) {
  const std::string extension = fs::path(path).extension().string();
  if (extension.empty()) throw Error("--video", "'" + path + "' has no container extension (use .mp4, .mkv or .mov)");
  if (!known_container(extension))
    throw Error("--video",
                "'" + path + "': '" + extension + "' is not a video container lact writes (use .mp4, .mkv or .mov)");
  for (const char* tool : {"ffmpeg", "ffprobe"})
    if (find_program(tool).empty())
      throw Error("--video", std::string("needs ") + tool + " on PATH, and it is not there (Debian package ffmpeg)");
  stall_seconds();
}

VideoWriter::VideoWriter(const std::string& path, const std::vector<Camera>& frames, int fps) : path_(path) {
  check_video_output(path);
  stall_s_ = stall_seconds();
  if (frames.empty()) throw Error(path, "no frames for the video");
  width_ = frames[0].width, height_ = frames[0].height;
  for (const Camera& c : frames)
    if (c.width != width_ || c.height != height_)
      throw Error(path, "the camera path's frames differ in size; a video needs one size");
  if (fps < 1 || fps > 1000) throw Error("--fps", "must be in 1..1000");
  make_parent_folder(path);
  target_ = resolve_output_path(path);  // a link's target, beside which the temporary goes
  temp_ = create_temporary_beside(target_, temp_token_);
  try {
    ffmpeg_ = std::make_unique<ProgramWithInput>(ffmpeg_arguments(width_, height_, fps, temp_), stall_s_);
  } catch (...) {  // an ffmpeg that cannot start (no pipe, not an executable): no destructor runs to remove it
    ::unlink(temp_.c_str());
    unregister_temporary(temp_token_);
    throw;
  }
}

VideoWriter::~VideoWriter() {
  ffmpeg_.reset();  // stops it when still running
  if (!temp_.empty()) ::unlink(temp_.c_str());
  unregister_temporary(temp_token_);  // after the unlink: a signal in between removes a name that is gone
}

void VideoWriter::fail_ffmpeg(const std::string& what) {
  const std::string said = ffmpeg_ ? ffmpeg_->last_error_line() : "";
  ffmpeg_.reset();
  throw Error(path_, what + quoted_tail(said));
}

void VideoWriter::add_frame(const Image& image) {
  if (image.width != width_ || image.height != height_) throw Error(path_, "frame of another size");
  std::vector<unsigned char> bytes(image.rgb.size());
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<unsigned char>(std::lround(std::clamp(image.rgb[i], 0.0f, 1.0f) * 255.0f));
  if (!ffmpeg_) throw Error(path_, "the video was already finished");
  if (ffmpeg_->write(bytes.data(), bytes.size())) {
    ++frames_written_;
    return;
  }
  const std::string seconds = std::to_string(static_cast<int>(std::ceil(stall_s_)));
  if (ffmpeg_->stalled()) fail_ffmpeg("ffmpeg took no frame data for " + seconds + " s (stopped it)");
  const int status = ffmpeg_->finish();
  fail_ffmpeg("ffmpeg stopped reading frames (exit status " + std::to_string(status) + ")");
}

void VideoWriter::finish() {
  if (!ffmpeg_) throw Error(path_, "the video was already finished");
  struct stat info {};
  off_t size = 0;
  const auto grew = [&] {  // ffmpeg still writing the last frames counts as progress
    const off_t before = size;
    if (::stat(temp_.c_str(), &info) == 0) size = info.st_size;
    return size != before;
  };
  const int status = ffmpeg_->finish(grew);
  const std::string seconds = std::to_string(static_cast<int>(std::ceil(stall_s_)));
  if (ffmpeg_->stalled()) fail_ffmpeg("ffmpeg did not finish within " + seconds + " s of the last frame (stopped it)");
  if (status != 0) fail_ffmpeg("ffmpeg failed (exit status " + std::to_string(status) + ")");
  ffmpeg_.reset();
  check_frame_count();
  commit();
}

// ffmpeg exits 0 after some failures (a full disk while it writes the trailer): the file it left is read back
// with ffprobe, which must count exactly the frames written.
void VideoWriter::check_frame_count() const {
  std::string counted, errors;
  const double bound = stall_s_ + 0.1 * static_cast<double>(frames_written_);  // decoding is far faster
  int status = -1;
  try {
    status = run_program({"ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=nb_read_frames", "-of", "csv=p=0", "file:" + temp_},
                         &counted, bound, &errors);
  } catch (const Error& e) {
    throw Error(path_, std::string("cannot count the frames ffmpeg wrote: ") + e.what());
  }
  while (!counted.empty() && (counted.back() == '\n' || counted.back() == '\r' || counted.back() == ' '))
    counted.pop_back();
  const bool number =
      !counted.empty() && counted.size() < 19 && counted.find_first_not_of("0123456789") == std::string::npos;
  if (status != 0 || !number) {
    std::string said = errors.substr(0, errors.find('\n'));
    throw Error(path_, "ffmpeg exited 0 but what it wrote is not a readable video (disk full?)" +
                           quoted_tail(said.substr(0, 300)));
  }
  const unsigned long long frames = std::stoull(counted);
  if (frames != frames_written_)
    throw Error(path_, "ffmpeg exited 0 but its video holds " + std::to_string(frames) + " of the " +
                           std::to_string(frames_written_) + " frames given (disk full?)");
}

// Synced, then moved to the final name: without --force never over a file that appeared meanwhile (another run
// writing the same name), and through a link rather than over it (system/file_io).
void VideoWriter::commit() {
  const int fd = ::open(temp_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw Error(path_, "cannot sync the video ffmpeg wrote (" + why + ")");
  }
  ::close(fd);
  rename_into_place(temp_, target_);
  temp_.clear();
  unregister_temporary(temp_token_);
  temp_token_ = -1;
}

}  // namespace lact
