// Where in the video each imported frame came from: `lact import` of a video writes frames.json in the scene
// (the frame's index in the video and its time in seconds, for every image in images/) and the summary says the
// span of the video the frames cover. The time is the index over ffprobe's average frame rate, counted from the
// first frame ffmpeg decodes: exact for a constant frame rate, the average's for a variable one (a phone's).
#pragma once

#include <string>
#include <vector>

#include "import/video_frames.h"

namespace lact {

// frames.json: {"video", "frame_rate", "video_frames", "frames": [{"image", "frame", "seconds"}, ...]} for the
// images of `names` (frame_00001.png is the first frame written, ...); "seconds" is null when the rate is
// unknown. An image name that is not a written frame's is left out.
std::string frame_times_json(const std::string& video, const VideoFrames& frames,
                             const std::vector<std::string>& names);

// "frames 0.2 s to 9.8 s of clip.mp4 (video frames 6 to 294 of 300, 29.97 per second); each image's time in
// frames.json", or with the frames only when the rate is unknown; "" when no name is a written frame's.
std::string frame_span_text(const std::string& video, const VideoFrames& frames, const std::vector<std::string>& names);

}  // namespace lact
