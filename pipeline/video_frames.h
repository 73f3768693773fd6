// Frames of a video for `lact import`: ffprobe counts its frames, ffmpeg (an argument vector, never a shell)
// writes the chosen ones as PNG, spread evenly over the video; optionally the sharpest of 3 candidates per
// frame (the variance of the Laplacian of its grey levels: blur lowers it).
#pragma once

#include <string>
#include <vector>

#include "datasets/image_io.h"

namespace lact {

struct VideoFrameOptions {
  int frames = 60;        // spread evenly (when fps <= 0)
  double fps = 0;         // frames per second of video instead
  bool sharpest = false;  // the sharpest of 3 candidates in each frame's window
  double timeout_s = 0;   // for each ffmpeg/ffprobe run (0: 600 s)
};

// Writes the frames into `folder` (which exists) as frame_00001.png, ...; returns how many. Error naming the
// video when it cannot be read (ffprobe/ffmpeg missing, not a video, no frames).
int extract_video_frames(const std::string& video, const std::string& folder, const VideoFrameOptions& options);

// The frame indices to take from `count` frames: `wanted` windows of equal length, `per_window` candidates
// spread within each (all frames when there are fewer).
std::vector<std::vector<long>> frame_windows(long count, int wanted, int per_window);

// The variance of the 4-neighbour Laplacian of the image's grey levels (0..255).
double laplacian_variance(const Rgba8Image& image);

}  // namespace lact
