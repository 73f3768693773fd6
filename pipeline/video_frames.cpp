#include "pipeline/video_frames.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "pipeline/subprocess.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

std::string first_line(const std::string& text) {
  const size_t begin = text.find_first_not_of("\r\n \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, std::min<size_t>(text.find_first_of("\r\n", begin) - begin, 200));
}

std::string last_line(const std::string& text) {
  const size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  const size_t begin = text.find_last_of("\r\n", end);
  const size_t start = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(start, std::min<size_t>(end + 1 - start, 200));
}

std::string require_program(const std::string& name) {
  const std::string path = find_program(name);
  if (path.empty())
    throw Error(name, "not found on PATH: video input needs ffmpeg (Debian/Ubuntu: sudo apt-get install ffmpeg)");
  return path;
}

// The number of frames (packets) of the first video stream and its duration in seconds.
void probe_video(const std::string& video, double timeout_s, long& count, double& duration) {
  std::string out, err;
  const int status = run_program(
      {require_program("ffprobe"), "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
       "stream=nb_read_packets:format=duration", "-of", "default=noprint_wrappers=1", "file:" + video},
      &out, timeout_s, &err);
  count = 0, duration = 0;
  for (size_t at = 0; at < out.size();) {
    const size_t end = std::min(out.find('\n', at), out.size());
    const std::string line = out.substr(at, end - at);
    if (line.rfind("nb_read_packets=", 0) == 0) count = std::atol(line.c_str() + 16);
    if (line.rfind("duration=", 0) == 0) duration = std::atof(line.c_str() + 9);
    at = end + 1;
  }
  if (status != 0 || count <= 0)
    throw Error(video, "not a readable video (ffprobe: " +
                           (last_line(err).empty() ? std::string("no video stream") : last_line(err)) + ")");
}

// ffmpeg's select expression for these frame indices: eq(n\,3)+eq(n\,10)+...
std::string select_filter(const std::vector<long>& indices) {
  std::string expr;
  for (long i : indices) expr += (expr.empty() ? "" : "+") + std::string("eq(n\\,") + std::to_string(i) + ")";
  return "select=" + expr;
}

}  // namespace

std::vector<std::vector<long>> frame_windows(long count, int wanted, int per_window) {
  std::vector<std::vector<long>> windows;
  if (count <= 0 || wanted <= 0) return windows;
  const long n = std::min<long>(wanted, count);
  const double length = static_cast<double>(count) / n;
  const int k = static_cast<int>(std::clamp<double>(per_window, 1, std::floor(length)));
  for (long w = 0; w < n; ++w) {
    std::vector<long> window;
    for (int j = 0; j < k; ++j) {
      const long index = std::min(count - 1, static_cast<long>(std::floor(w * length + (j + 0.5) * length / k)));
      if (window.empty() || window.back() != index) window.push_back(index);
    }
    windows.push_back(window);
  }
  return windows;
}

double laplacian_variance(const Rgba8Image& image) {
  const int w = image.width, h = image.height;
  if (w < 3 || h < 3) return 0;
  std::vector<double> grey(static_cast<size_t>(w) * h);
  for (size_t p = 0; p < grey.size(); ++p)
    grey[p] = 0.299 * image.pixels[p * 4] + 0.587 * image.pixels[p * 4 + 1] + 0.114 * image.pixels[p * 4 + 2];
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

int extract_video_frames(const std::string& video, const std::string& folder, const VideoFrameOptions& o) {
  const double timeout = o.timeout_s > 0 ? o.timeout_s : 600;
  long count = 0;
  double duration = 0;
  probe_video(video, timeout, count, duration);
  const int wanted = o.fps > 0 ? std::max(1, static_cast<int>(std::lround(duration * o.fps))) : o.frames;
  const std::vector<std::vector<long>> windows = frame_windows(count, wanted, o.sharpest ? 3 : 1);
  std::vector<long> indices;
  for (const auto& w : windows) indices.insert(indices.end(), w.begin(), w.end());
  const fs::path pattern = fs::path(folder) / "candidate_%06d.png";
  std::string err;
  const int status = run_program({require_program("ffmpeg"), "-nostdin", "-v", "error", "-i", "file:" + video, "-vf",
                                  select_filter(indices), "-vsync", "0", "-f", "image2", pattern.string()},
                                 nullptr, timeout, &err);
  if (status != 0) throw Error(video, "ffmpeg could not read its frames (" + first_line(err) + ")");
  // Candidates are numbered from 1 in index order: keep the sharpest of each window as frame_NNNNN.png.
  int written = 0, next = 1;
  for (const auto& window : windows) {
    fs::path best;
    double best_score = -1;
    for (size_t j = 0; j < window.size(); ++j, ++next) {
      char name[32];
      std::snprintf(name, sizeof name, "candidate_%06d.png", next);
      const fs::path candidate = fs::path(folder) / name;
      std::error_code ec;
      if (!fs::exists(candidate, ec)) continue;
      const double score = window.size() > 1 ? laplacian_variance(read_image(candidate.string())) : 0;
      if (score > best_score) {
        if (!best.empty()) fs::remove(best, ec);
        best = candidate, best_score = score;
      } else {
        fs::remove(candidate, ec);
      }
    }
    if (best.empty()) continue;
    char name[32];
    std::snprintf(name, sizeof name, "frame_%05d.png", ++written);
    fs::rename(best, fs::path(folder) / name);
  }
  if (written == 0) throw Error(video, "ffmpeg wrote no frames (" + first_line(err) + ")");
  return written;
}

}  // namespace lact
