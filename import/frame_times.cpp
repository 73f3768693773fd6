#include "import/frame_times.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace lact {

namespace {

// The video frame of an image written as frame_NNNNN.png (its number counts the frames written, from 1), or -1.
long video_frame_of(const std::string& name, const VideoFrames& frames) {
  const std::string prefix = "frame_", suffix = ".png";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  const long k = std::stol(digits);
  return k >= 1 && k <= static_cast<long>(frames.frames.size()) ? frames.frames[k - 1] : -1;
}

}  // namespace

std::string frame_times_json(const std::string& video, const VideoFrames& frames,
                             const std::vector<std::string>& names) {
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& name : names) {
    const long frame = video_frame_of(name, frames);
    if (frame < 0) continue;
    nlohmann::json seconds = nullptr;
    if (frames.frame_rate > 0) seconds = frame / frames.frame_rate;
    list.push_back({{"image", name}, {"frame", frame}, {"seconds", seconds}});
  }
  nlohmann::json rate = nullptr;
  if (frames.frame_rate > 0) rate = frames.frame_rate;
  const nlohmann::json doc = {{"video", video}, {"frame_rate", rate}, {"video_frames", frames.count}, {"frames", list}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string frame_span_text(const std::string& video, const VideoFrames& frames,
                            const std::vector<std::string>& names) {
  long first = -1, last = -1;
  for (const std::string& name : names) {
    const long frame = video_frame_of(name, frames);
    if (frame < 0) continue;
    first = first < 0 ? frame : std::min(first, frame), last = std::max(last, frame);
  }
  if (first < 0) return "";
  char text[200];
  if (frames.frame_rate > 0)
    std::snprintf(text, sizeof text, "frames %.2f s to %.2f s of %%s (video frames %ld to %ld of %ld, %.4g per second)",
                  first / frames.frame_rate, last / frames.frame_rate, first, last, frames.count, frames.frame_rate);
  else
    std::snprintf(text, sizeof text, "frames of %%s: video frames %ld to %ld of %ld (its frame rate unknown)", first,
                  last, frames.count);
  std::string line = text;
  line.replace(line.find("%s"), 2, video);
  return line + "; each image's time in frames.json";
}

}  // namespace lact
