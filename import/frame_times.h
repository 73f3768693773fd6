// Where in the video each imported frame came from: `lact import` of a video writes frames.json in the scene
// (the frame's index in the video and its time in seconds, for every image in images/) and the summary says the
// span of the video the frames cover. The time is the frame's own presentation time, which ffmpeg reports for
// each frame it hands over (a second output of the same pass, beside the frames: no second decode), so it is
// exact at a variable frame rate (a phone's) too, where the index over the average rate is not.
#pragma once

#include <string>
#include <vector>

#include "import/video_frames.h"

namespace lact {

// ffmpeg's output arguments (after its input) for the times of the frames `select` (a filter expression) passes,
// written to `path` as ffmpeg's framecrc text: one line per frame with its timestamp in the video's time base
// ("-enc_time_base -1": else ffmpeg rounds it to the nominal frame rate). Placed before the frames' own output,
// ffmpeg writes (and flushes) a frame's line before it hands over the frame.
std::vector<std::string> frame_time_output(const std::string& select, const std::string& path);

// The time in seconds of each frame line of ffmpeg's framecrc `text`, in order: its pts times the "#tb 0: N/D"
// time base; NaN for a line without a usable pts (or before any time base). Text that is not framecrc gives
// NaNs or nothing, never an error: the frames themselves do not depend on it.
std::vector<double> framecrc_seconds(const std::string& text);

// frames.json: {"video", "frame_rate", "video_frames", "frames": [{"image", "frame", "seconds"}, ...]} for the
// images of `names` (frame_00001.png is the first frame written, ...); "seconds" is the frame's presentation time
// (null when ffmpeg gave none), "frame_rate" ffprobe's average (the container's nominal one; null when unknown).
// An image name that is not a written frame's is left out.
std::string frame_times_json(const std::string& video, const VideoFrames& frames,
                             const std::vector<std::string>& names);

// "frames 0.2 s to 9.8 s of clip.mp4 (video frames 6 to 294 of 300, 29.97 per second); each image's time in
// frames.json" (the first and last frame's times), or with the frames only when their times are unknown; ""
// when no name is a written frame's.
std::string frame_span_text(const std::string& video, const VideoFrames& frames, const std::vector<std::string>& names);

}  // namespace lact
