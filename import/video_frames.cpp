#include "import/video_frames.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "datasets/image_format.h"
#include "import/frame_times.h"
#include "import/image_orientation.h"
#include "system/clock.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/subprocess.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxPamHeader = 256;        // ffmpeg's PAM header is about 70 bytes
constexpr long kMaxFrameCount = 1000000000;  // keeps ffmpeg's select arithmetic (doubles) exact: below 2^53

// `windows` windows of equal length over `count` frames and `per_window` picks spread in each: pick m (of
// windows x per_window) is frame floor((2m + 1) count / (2 windows per_window)), the middle of the m-th of as
// many equal parts. In integers, so that ffmpeg's select expression (select_expression) finds the same frames.
struct WindowGrid {
  long count = 0, windows = 0, per_window = 1;
  long pick(long m) const { return ((2 * m + 1) * count) / (2 * windows * per_window); }
};

WindowGrid window_grid(long count, int wanted, int per_window) {
  WindowGrid g;
  g.count = count;
  g.windows = std::min<long>(wanted, count);
  g.per_window = std::clamp<long>(per_window, 1, count / g.windows);  // picks at least a frame apart
  return g;
}

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string require_program(const std::string& name) {
  const std::string path = find_program(name);
  if (path.empty())
    throw Error(name, "not found on PATH: video input needs ffmpeg (Debian/Ubuntu: sudo apt-get install ffmpeg)");
  return path;
}

// A whole decimal count of 1 to 12 digits (no sign, no spaces).
bool parse_count(const std::string& text, long& value) {
  if (text.empty() || text.size() > 12 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  value = std::strtol(text.c_str(), nullptr, 10);
  return true;
}

// A whole finite decimal number of at most 32 characters.
bool parse_number(const std::string& text, double& value) {
  if (text.empty() || text.size() > 32 || text.find_first_of(" \t") != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && errno == 0 && std::isfinite(value);
}

// ffprobe's answer: the number of frames (packets) of the first video stream, its codec, the container's format
// and the duration ("" when ffprobe printed none).
struct VideoProbe {
  long count = 0;
  std::string count_text = "(none)", duration_text, codec, format, rate_text;
};

// Containers and codecs ffmpeg reads from text (a .txt or .nfo rendered as pictures of its characters, the
// "tty" demuxer's ANSI art): ffprobe sees a video stream in any text file long enough.
bool is_text_video(const VideoProbe& probe) {
  for (const char* format : {"tty", "bin", "xbin", "adf", "idf"})
    if (probe.format == format) return true;
  for (const char* codec : {"ansi", "bintext", "xbin", "idf"})
    if (probe.codec == codec) return true;
  return false;
}

// ffmpeg's still-image demuxers: "image2" (a file named like an image) and "png_pipe", "jpeg_pipe", ...
bool is_still_image(const VideoProbe& probe) {
  const std::string& f = probe.format;
  return f == "image2" || (f.size() > 5 && f.compare(f.size() - 5, 5, "_pipe") == 0);
}

// Error naming the video when it holds no video ffmpeg can hand over as frames of a capture.
void refuse_non_video(const std::string& video, const VideoProbe& probe) {
  if (probe.count_text == "(none)")
    throw Error(video, "not a readable video: it has no video stream (ffprobe finds " +
                           (probe.format.empty() ? std::string("no container") : "a '" + probe.format + "' file") +
                           " without one)");
  if (is_text_video(probe))
    throw Error(video, "not a readable video: ffprobe reads it as text ('" + probe.format + "' format, '" +
                           probe.codec + "' codec), not as a video");
  if (is_still_image(probe))
    throw Error(video, "is a single image, not a video (ffprobe reads it as '" + probe.format +
                           "'): name a folder of at least 3 overlapping photos, or a video file");
}

VideoProbe probe_video(const std::string& video, double timeout_s) {
  std::string out, err;
  const int status =
      run_program({require_program("ffprobe"), "-v", "error", "-select_streams", "v:0", "-count_packets",
                   "-show_entries", "stream=nb_read_packets,codec_name,avg_frame_rate:format=duration,format_name",
                   "-of", "default=noprint_wrappers=1", "file:" + video},
                  &out, timeout_s, &err);
  VideoProbe probe;
  for (size_t at = 0; at < out.size();) {
    const size_t end = std::min(out.find('\n', at), out.size());
    const std::string line = out.substr(at, std::min<size_t>(end - at, 200));
    if (line.rfind("nb_read_packets=", 0) == 0) probe.count_text = line.substr(16);
    if (line.rfind("duration=", 0) == 0) probe.duration_text = line.substr(9);
    if (line.rfind("codec_name=", 0) == 0) probe.codec = line.substr(11, 40);
    if (line.rfind("format_name=", 0) == 0) probe.format = line.substr(12, 40);
    if (line.rfind("avg_frame_rate=", 0) == 0) probe.rate_text = line.substr(15, 40);
    at = end + 1;
  }
  const std::string said = last_output_line(err);
  if (status != 0)
    throw Error(video, "not a readable video (ffprobe: " + (said.empty() ? "no video stream" : said) + ")");
  refuse_non_video(video, probe);
  if (!parse_count(probe.count_text, probe.count) || probe.count <= 0 || probe.count > kMaxFrameCount)
    throw Error(video, "not a readable video (ffprobe counts '" + probe.count_text +
                           "' frames in its first video "
                           "stream)");
  return probe;
}

// Frames per second: ffprobe's average frame rate ("30000/1001"), else the frames over the duration; 0 when
// neither is a positive finite number.
double frame_rate(const VideoProbe& probe) {
  const size_t slash = probe.rate_text.find('/');
  double num = 0, den = 1, duration = 0;
  const bool ratio = slash == std::string::npos ? parse_number(probe.rate_text, num)
                                                : parse_number(probe.rate_text.substr(0, slash), num) &&
                                                      parse_number(probe.rate_text.substr(slash + 1), den);
  if (ratio && num > 0 && den > 0 && std::isfinite(num / den) && num / den <= 1e6) return num / den;
  if (parse_number(probe.duration_text, duration) && duration > 0) return probe.count / duration;
  return 0;
}

// How many frames were asked for: --frames, or --fps times the duration ffprobe reports (at least 1). Past
// the video's frames --fps is refused only when even all of them are too many.
long frames_asked(const std::string& video, const VideoProbe& probe, const VideoFrameOptions& o) {
  if (o.fps <= 0) return o.frames;
  double duration = 0;
  if (!parse_number(probe.duration_text, duration) || !(duration > 0))
    throw Error(video, "ffprobe reports no usable duration ('" + probe.duration_text +
                           "'), which --fps needs: pass --frames instead");
  const double asked = std::min(duration * o.fps, static_cast<double>(kMaxFrameCount));
  const double wanted = std::min(asked, static_cast<double>(probe.count));
  if (wanted > kMaxVideoFrames)
    throw Error("--fps", "takes " + std::to_string(std::llround(wanted)) + " frames of " + video + ", more than " +
                             std::to_string(kMaxVideoFrames) + ": lower it or pass --frames");
  return std::max(1L, std::lround(asked));
}

// The chosen frames of a video as ffmpeg hands them over, in order: each window's best candidate (the sharpest,
// or its only one) written as frame_NNNNN.png once its last candidate has come.
class FramePicker {
 public:
  FramePicker(const std::vector<std::vector<long>>& windows, fs::path folder, int max_side)
      : folder_(std::move(folder)), max_side_(max_side) {
    for (size_t w = 0; w < windows.size(); ++w)
      for (size_t j = 0; j < windows[w].size(); ++j)
        picks_.push_back({windows[w][j], windows[w].size(), j + 1 == windows[w].size()});
  }
  // The `ordinal`-th frame ffmpeg selected; false once every pick has come.
  bool take(long ordinal, int width, int height, const uint8_t* rgb) {
    if (ordinal >= static_cast<long>(picks_.size())) return false;
    const Pick& pick = picks_[ordinal];
    const double score = pick.candidates > 1 ? laplacian_variance(width, height, rgb, 3) : 0;
    if (!has_best_ || score > best_score_) {
      best_.assign(rgb, rgb + static_cast<size_t>(width) * height * 3);
      best_width_ = width, best_height_ = height, best_score_ = score, has_best_ = true;
      best_frame_ = pick.frame, best_ordinal_ = ordinal;
    }
    if (pick.last) write_best();
    return ordinal + 1 < static_cast<long>(picks_.size());
  }
  // After the stream: the window it stopped in, when a candidate of it came.
  int finish() {
    write_best();
    return written_;
  }
  // The video frame (from 0) each written frame is, in order: frame_00001.png first.
  const std::vector<long>& frames() const { return frames_; }
  // The ordinal among the frames ffmpeg selected of each written frame, in the same order.
  const std::vector<long>& ordinals() const { return ordinals_; }

 private:
  struct Pick {
    long frame;  // its index in the video
    size_t candidates;
    bool last;  // the window's last candidate
  };
  // Written already capped to the working size: the import then copies it as it is (PNG encoding is most of
  // the time lact spends on a frame, so it is done once, on the smaller image).
  void write_best() {
    if (!has_best_) return;
    char name[32];
    std::snprintf(name, sizeof name, "frame_%05d.png", ++written_);
    if (max_side_ > 0 && std::max(best_width_, best_height_) > max_side_) shrink_best();
    write_file_atomically((folder_ / name).string(), encode_png(best_width_, best_height_, best_.data()));
    frames_.push_back(best_frame_), ordinals_.push_back(best_ordinal_);
    has_best_ = false;
  }
  void shrink_best() {
    Rgba8Image image;
    image.width = best_width_, image.height = best_height_;
    image.pixels.resize(static_cast<size_t>(best_width_) * best_height_ * 4, 255);
    for (size_t p = 0; p < best_.size() / 3; ++p) std::memcpy(&image.pixels[p * 4], &best_[p * 3], 3);
    const Rgba8Image small = shrink_to_long_side(image, max_side_);
    best_width_ = small.width, best_height_ = small.height;
    best_.resize(static_cast<size_t>(small.width) * small.height * 3);
    for (size_t p = 0; p < best_.size() / 3; ++p) std::memcpy(&best_[p * 3], &small.pixels[p * 4], 3);
  }
  fs::path folder_;
  int max_side_;
  std::vector<Pick> picks_;
  std::vector<long> frames_, ordinals_;
  long best_frame_ = 0, best_ordinal_ = 0;
  std::vector<uint8_t> best_;
  int best_width_ = 0, best_height_ = 0, written_ = 0;
  double best_score_ = -1;
  bool has_best_ = false;
};

std::string pam_field(const std::string& header, const std::string& key) {
  const size_t at = header.find("\n" + key + " ");
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size() + 2;
  return header.substr(begin, header.find('\n', begin) - begin);
}

}  // namespace

void PamFrames::parse_header() {
  long width = 0, height = 0;
  const bool ok = header_.rfind("P7\n", 0) == 0 && pam_field(header_, "DEPTH") == "3" &&
                  pam_field(header_, "MAXVAL") == "255" && pam_field(header_, "TUPLTYPE") == "RGB" &&
                  parse_count(pam_field(header_, "WIDTH"), width) && parse_count(pam_field(header_, "HEIGHT"), height);
  if (!ok)
    throw Error(source_, "frame " + std::to_string(index_) + " is not an 8-bit RGB PAM image (its header: '" +
                             first_output_line(header_) + "...')");
  require_decodable_size(source_ + " frame " + std::to_string(index_), static_cast<uint64_t>(width),
                         static_cast<uint64_t>(height));
  width_ = static_cast<int>(width), height_ = static_cast<int>(height);
  body_ = static_cast<size_t>(width) * height * 3, got_ = 0;
  keep_ = wanted_(index_);
  if (keep_) pixels_.resize(body_);
}

bool PamFrames::feed(const char* data, size_t size) {
  const char* const end = data + size;
  while (data < end) {
    if (in_header_) {  // up to and including "ENDHDR\n"
      const char* newline = std::find(data, end, '\n');
      header_.append(data, std::min<size_t>(newline == end ? end - data : newline + 1 - data, kMaxPamHeader + 1));
      data = newline == end ? end : newline + 1;
      if (header_.size() > kMaxPamHeader)
        throw Error(source_, "frame " + std::to_string(index_) + " has no PAM header (no ENDHDR line)");
      if (header_.size() >= 3 && header_.compare(0, 3, "P7\n") != 0)
        throw Error(source_, "frame " + std::to_string(index_) + " is not an 8-bit RGB PAM image (it starts '" +
                                 first_output_line(header_) + "')");
      if (newline == end || header_.size() < 7 || header_.compare(header_.size() - 7, 7, "ENDHDR\n") != 0) continue;
      parse_header();
      in_header_ = false;
    }
    const size_t n = std::min<size_t>(end - data, body_ - got_);
    if (keep_) std::memcpy(pixels_.data() + got_, data, n);
    data += n, got_ += n;
    if (got_ < body_) continue;
    const bool more = !keep_ || on_frame_(index_, width_, height_, pixels_.data());
    ++index_;
    in_header_ = true, header_.clear();
    if (!more) return false;
  }
  return true;
}

std::vector<std::vector<long>> frame_windows(long count, int wanted, int per_window) {
  std::vector<std::vector<long>> windows;
  if (count <= 0 || wanted <= 0) return windows;
  const WindowGrid grid = window_grid(count, wanted, per_window);
  for (long w = 0; w < grid.windows; ++w) {
    std::vector<long> window;
    for (long j = 0; j < grid.per_window; ++j) window.push_back(grid.pick(w * grid.per_window + j));
    windows.push_back(window);
  }
  return windows;
}

std::string select_expression(long count, int wanted, int per_window) {
  const WindowGrid g = window_grid(count, wanted, per_window);
  const std::string c = std::to_string(count), d = std::to_string(2 * g.windows * g.per_window);
  // The pick a frame n could be: the m with n <= (2m + 1) c / d < n + 1, the least m >= (n d - c) / 2c.
  const std::string m = "ceil((n*" + d + "-" + c + ")/" + std::to_string(2 * count) + ")";
  return "eq(n\\," + std::string("floor((2*") + m + "+1)*" + c + "/" + d + "))*lt(" + m + "\\," +
         std::to_string(g.windows * g.per_window) + ")";
}

double laplacian_variance(int w, int h, const uint8_t* pixels, int channels) {
  if (w < 3 || h < 3) return 0;
  std::vector<double> grey(static_cast<size_t>(w) * h);
  for (size_t p = 0; p < grey.size(); ++p) {
    const uint8_t* px = pixels + p * channels;
    grey[p] = 0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2];
  }
  double sum = 0, sum2 = 0;
  for (int y = 1; y < h - 1; ++y)
    for (int x = 1; x < w - 1; ++x) {
      const size_t p = static_cast<size_t>(y) * w + x;
      const double l = grey[p - 1] + grey[p + 1] + grey[p - w] + grey[p + w] - 4 * grey[p];
      sum += l, sum2 += l * l;
    }
  const double n = static_cast<double>(w - 2) * (h - 2);
  return sum2 / n - (sum / n) * (sum / n);
}

double laplacian_variance(const Rgba8Image& image) {
  return laplacian_variance(image.width, image.height, image.pixels.data(), 4);
}

std::string short_video_note(const std::string& video, const VideoFrames& frames, const VideoFrameOptions& o) {
  if (frames.asked <= frames.count) return "";
  const std::string flag = o.fps > 0 ? "--fps " + number_text(o.fps) + " (" + std::to_string(frames.asked) + ")"
                                     : "--frames " + std::to_string(frames.asked);
  return video + " has only " + std::to_string(frames.count) + " frames, fewer than " + flag + " asks for: all " +
         std::to_string(frames.count) + " taken";
}

namespace {

// Progress lines while ffmpeg hands over the picks: at most one every 2 s, with the time left extrapolated.
class FrameProgress {
 public:
  FrameProgress(long total, bool shown) : total_(total), shown_(shown) {}
  void took(long done) {
    if (!shown_ || seconds_since(last_) < 2.0) return;
    last_ = SteadyClock::now();
    const double elapsed = seconds_since(start_), eta = elapsed / std::max(1L, done) * (total_ - done);
    std::fprintf(stderr, "lact import: frames %ld/%ld, %.0f s, ETA %.0f s\n", done, total_, elapsed, eta);
  }
  void finished() const {
    if (shown_) std::fprintf(stderr, "lact import: frames done in %.1f s\n", seconds_since(start_));
  }

 private:
  long total_;
  bool shown_;
  SteadyClock::time_point start_ = SteadyClock::now(), last_ = SteadyClock::now();
};

}  // namespace

namespace {

// The frames ffmpeg decodes from the first video stream, counted by decoding them (ffprobe -count_frames): the
// packet count probe_video reads without decoding is more than this when an edit list hides frames (a trim made
// without re-encoding). 0 when ffprobe gives no count.
long decoded_frame_count(const std::string& video, double timeout_s) {
  std::string out, err;
  const int status =
      run_program({require_program("ffprobe"), "-v", "error", "-select_streams", "v:0", "-count_frames",
                   "-show_entries", "stream=nb_read_frames", "-of", "default=noprint_wrappers=1", "file:" + video},
                  &out, timeout_s, &err);
  const size_t at = out.find("nb_read_frames=");
  long count = 0;
  if (status != 0 || at == std::string::npos) return 0;
  const std::string text = out.substr(at + 15, std::min<size_t>(out.find('\n', at), out.size()) - at - 15);
  return parse_count(text, count) ? count : 0;
}

// What one pass of ffmpeg took: the frames written, the picks it selected and handed over, and the picks asked.
struct FramePass {
  int written = 0;
  long handed = 0, picks = 0;
  std::vector<long> frames;     // of each written frame
  std::vector<double> seconds;  // the presentation time of each written frame (NaN: unknown)
};

constexpr uint64_t kMaxFrameTimesBytes = 64ull << 20;  // ffmpeg's framecrc lines (under 100 bytes) for 300,000 picks

// The times ffmpeg wrote to `path` so far, one per selected frame (none when it wrote no file).
std::vector<double> frame_times_in(const std::string& path) {
  try {
    return framecrc_seconds(read_whole_file(path, kMaxFrameTimesBytes));
  } catch (const Error&) {
    return {};
  }
}

// ffmpeg decodes every frame, but converts and hands over only the picks (in order: the k-th is pick k), and
// writes each pick's time to `times` first (import/frame_times.h).
std::vector<std::string> frames_command(const std::string& video, const std::string& select, const std::string& times) {
  std::vector<std::string> argv = {require_program("ffmpeg"), "-nostdin", "-v", "error", "-y", "-i",
                                   "file:" + video,           "-vsync",   "0"};
  for (const std::string& arg : frame_time_output(select, times)) argv.push_back(arg);
  for (const char* arg : {"-map", "0:v:0", "-vf"}) argv.push_back(arg);
  argv.push_back("select=" + select);
  for (const char* arg : {"-f", "image2pipe", "-c:v", "pam", "-pix_fmt", "rgb24", "pipe:1"}) argv.push_back(arg);
  return argv;
}

// One pass: `wanted` windows (each of `per_window` candidates) over `count` frames, written into `folder`.
FramePass take_frames(const std::string& video, const std::string& folder, const VideoFrameOptions& o, long count,
                      int wanted) {
  const int per_window = o.sharpest ? 3 : 1;
  const std::vector<std::vector<long>> windows = frame_windows(count, wanted, per_window);
  FramePicker picker(windows, folder, o.max_side);
  FramePass pass;
  for (const std::vector<long>& window : windows) pass.picks += static_cast<long>(window.size());
  FrameProgress progress(pass.picks, o.progress);
  const std::string times = (fs::path(folder) / "frame_times.framecrc").string();
  PamFrames frames(
      "ffmpeg's frames of " + video, [](long) { return true; },
      [&](long i, int w, int h, const uint8_t* rgb) {
        progress.took(i + 1);
        // Stopped after the last pick once the picks' times are all in; else ffmpeg runs to its end (an ffmpeg
        // that writes its outputs from threads of their own may write the last time after the last frame).
        return picker.take(i, w, h, rgb) || static_cast<long>(frame_times_in(times).size()) <= i;
      });
  StreamLimits limits;
  limits.timeout_s = o.timeout_s;  // 0: none (the stall limit still bounds it)
  limits.timeout_hint = "raise --max-seconds, or ask for fewer --frames";
  limits.stall_s = o.stall_s;
  limits.stall_hint = "--stall-minutes sets the limit";
  std::string err;
  const int status = run_program_piped(
      frames_command(video, select_expression(count, wanted, per_window), times),
      [&](const std::string& piece) { return frames.feed(piece.data(), piece.size()); }, err, limits,
      "ffmpeg (frames of " + video + ")");
  const std::vector<double> seconds = frame_times_in(times);
  std::error_code ec;
  fs::remove(times, ec);  // before the frames' folder is read as images
  if (status != 0) throw Error(video, "ffmpeg could not read its frames (" + first_output_line(err) + ")");
  pass.written = picker.finish();
  pass.frames = picker.frames();
  pass.handed = frames.frames();
  for (long ordinal : picker.ordinals())
    pass.seconds.push_back(ordinal < static_cast<long>(seconds.size()) ? seconds[ordinal] : std::nan(""));
  if (pass.written == 0) throw Error(video, "ffmpeg wrote no frames (" + first_output_line(err) + ")");
  progress.finished();
  return pass;
}

void remove_frames(const std::string& folder) {
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) fs::remove(it->path(), ec);
}

}  // namespace

VideoFrames extract_video_frames(const std::string& video, const std::string& folder, const VideoFrameOptions& o) {
  const double probe_timeout_s = o.timeout_s > 0 ? o.timeout_s : 600;
  const VideoProbe probe = probe_video(video, probe_timeout_s);
  VideoFrames result;
  result.count = probe.count, result.asked = frames_asked(video, probe, o);
  int wanted = static_cast<int>(std::min(result.asked, probe.count));
  if (o.progress)  // ffmpeg decodes the whole video before the last frame comes: a while for a long one
    std::fprintf(stderr, "lact import: taking %d of the video's %ld frames (ffmpeg decodes all of them)\n", wanted,
                 probe.count);
  FramePass pass = take_frames(video, folder, o, probe.count, wanted);
  if (pass.handed < pass.picks) {
    // Fewer frames decoded than ffprobe's packets: the picks past the last decoded frame never came, and the
    // frames taken were fewer than asked, unsaid. Counted by decoding, and taken again over the frames there are.
    const long decoded = decoded_frame_count(video, probe_timeout_s);
    if (decoded > 0 && decoded < probe.count) {
      if (o.progress)
        std::fprintf(stderr,
                     "lact import: the video decodes to %ld of its %ld frames (an edit list hides the rest, as a trim "
                     "without re-encoding leaves): taking them again from those\n",
                     decoded, probe.count);
      remove_frames(folder);
      result.count = decoded;
      wanted = static_cast<int>(std::min(result.asked, decoded));
      pass = take_frames(video, folder, o, decoded, wanted);
    }
  }
  result.written = pass.written;
  result.frames = pass.frames;
  result.seconds = pass.seconds;
  result.frame_rate = frame_rate(probe);
  return result;
}

}  // namespace lact
