#include "import/frame_times.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace lact {

namespace {

// The written frame (from 0) of an image written as frame_NNNNN.png (its number counts the frames written, from
// 1), or -1.
long written_index(const std::string& name, const VideoFrames& frames) {
  const std::string prefix = "frame_", suffix = ".png";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  const long k = std::stol(digits);
  return k >= 1 && k <= static_cast<long>(frames.frames.size()) ? k - 1 : -1;
}

// The presentation time of written frame `k`, NaN when unknown.
double seconds_of(long k, const VideoFrames& frames) {
  return k < static_cast<long>(frames.seconds.size()) ? frames.seconds[k] : std::nan("");
}

// A whole decimal number between spaces: an optional '-' and at most 18 digits (ffmpeg's "no timestamp",
// INT64_MIN, has 19 and is refused).
bool parse_integer(const std::string& field, long long& value) {
  const size_t begin = field.find_first_not_of(' '), end = field.find_last_not_of(' ');
  if (begin == std::string::npos) return false;
  const std::string text = field.substr(begin, end + 1 - begin);
  const size_t digits = text[0] == '-' ? 1 : 0;
  if (text.size() == digits || text.size() - digits > 18 ||
      text.find_first_not_of("0123456789", digits) != std::string::npos)
    return false;
  value = std::stoll(text);
  return true;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t end = text.find(separator, at);
    parts.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) return parts;
    at = end + 1;
  }
}

// The time base N/D of a "#tb 0: N/D" line; 0/0 when the line is not one or N/D is not positive.
struct TimeBase {
  long long num = 0, den = 0;
};

TimeBase time_base_of(const std::string& line) {
  const std::string key = "#tb 0:";
  if (line.rfind(key, 0) != 0) return {};
  const std::vector<std::string> ratio = split(line.substr(key.size()), '/');
  TimeBase tb;
  if (ratio.size() != 2 || !parse_integer(ratio[0], tb.num) || !parse_integer(ratio[1], tb.den) || tb.num <= 0 ||
      tb.den <= 0)
    return {};
  return tb;
}

}  // namespace

std::vector<std::string> frame_time_output(const std::string& select, const std::string& path) {
  return {"-map",           "0:v:0", "-vf", "select=" + select, "-enc_time_base", "-1", "-c:v", "wrapped_avframe",
          "-flush_packets", "1",     "-f",  "framecrc",         "file:" + path};
}

std::vector<double> framecrc_seconds(const std::string& text) {
  std::vector<double> seconds;
  TimeBase tb;
  for (std::string line : split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("#tb ", 0) == 0) tb = time_base_of(line);
    if (line.empty() || line[0] < '0' || line[0] > '9') continue;  // a comment, or not a frame's line
    const std::vector<std::string> fields = split(line, ',');      // stream, dts, pts, duration, size, checksum
    long long stream = -1, pts = 0;
    if (!parse_integer(fields[0], stream) || stream != 0) continue;
    const bool known = tb.den > 0 && fields.size() >= 3 && parse_integer(fields[2], pts);
    // One rounding (pts * num is exact below 2^53): 10240 ticks of 1/49152 give 5/24's double, as
    // 10240 x (1/49152) does not.
    seconds.push_back(known ? static_cast<double>(pts) * static_cast<double>(tb.num) / static_cast<double>(tb.den)
                            : std::nan(""));
  }
  return seconds;
}

std::string frame_times_json(const std::string& video, const VideoFrames& frames,
                             const std::vector<std::string>& names) {
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& name : names) {
    const long k = written_index(name, frames);
    if (k < 0) continue;
    nlohmann::json seconds = nullptr;
    if (std::isfinite(seconds_of(k, frames))) seconds = seconds_of(k, frames);
    list.push_back({{"image", name}, {"frame", frames.frames[k]}, {"seconds", seconds}});
  }
  nlohmann::json rate = nullptr;
  if (frames.frame_rate > 0) rate = frames.frame_rate;
  const nlohmann::json doc = {{"video", video}, {"frame_rate", rate}, {"video_frames", frames.count}, {"frames", list}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string frame_span_text(const std::string& video, const VideoFrames& frames,
                            const std::vector<std::string>& names) {
  long first = -1, last = -1;  // written frames: the earliest and latest in the video
  for (const std::string& name : names) {
    const long k = written_index(name, frames);
    if (k < 0) continue;
    if (first < 0 || frames.frames[k] < frames.frames[first]) first = k;
    if (last < 0 || frames.frames[k] > frames.frames[last]) last = k;
  }
  if (first < 0) return "";
  const double from = seconds_of(first, frames), to = seconds_of(last, frames);
  char rate[40] = "";
  if (frames.frame_rate > 0) std::snprintf(rate, sizeof rate, ", %.4g per second", frames.frame_rate);
  char text[200];
  if (std::isfinite(from) && std::isfinite(to))
    std::snprintf(text, sizeof text, "frames %.2f s to %.2f s of %%s (video frames %ld to %ld of %ld%s)", from, to,
                  frames.frames[first], frames.frames[last], frames.count, rate);
  else
    std::snprintf(text, sizeof text, "frames of %%s: video frames %ld to %ld of %ld (their times unknown)",
                  frames.frames[first], frames.frames[last], frames.count);
  std::string line = text;
  line.replace(line.find("%s"), 2, video);
  return line + "; each image's time in frames.json";
}

}  // namespace lact
