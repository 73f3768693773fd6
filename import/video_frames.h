// Frames of a video for `lact import`: ffprobe counts its frames, ffmpeg (an argument vector, never a shell)
// decodes it and hands the chosen ones, spread evenly over the video, through a pipe as raw RGB images (PAM),
// which lact writes as PNG, with each one's presentation time (import/frame_times.h); optionally the sharpest of 3
// candidates per frame (the variance of the Laplacian of its grey levels: blur lowers it). ffmpeg chooses them with one
// closed-form `select` expression, the same integer arithmetic as frame_windows, whatever the number of frames (a sum
// of eq() terms, one per frame, fails past 100 terms, and past 128 KiB of argument).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "datasets/image_io.h"

namespace lact {

struct VideoFrameOptions {
  int frames = 60;        // spread evenly (when fps <= 0)
  double fps = 0;         // frames per second of video instead
  bool sharpest = false;  // the sharpest of 3 candidates in each frame's window
  double timeout_s = 0;   // for ffprobe's count and for ffmpeg's frames, each (0: ffprobe 600 s, ffmpeg none)
  double stall_s = 0;     // ffmpeg stopped after this long without a byte of output (0: none)
  int max_side = 0;       // frames written with their long side capped to this (area average; 0: as they are)
  bool progress = false;  // progress lines on stderr ("lact import: frames 12/60, 5 s, ETA 9 s")
};

constexpr int kMaxVideoFrames = 100000;  // the most frames --frames (or --fps times the duration) may ask for

// What extract_video_frames took: how many frames it wrote, how many the video has (ffprobe's count) and how
// many --frames or --fps asked for (more than the video has: every frame is taken).
struct VideoFrames {
  int written = 0;
  long count = 0, asked = 0;
  std::vector<long> frames;     // the video frame (from 0, in the order ffmpeg decodes them for display) of
                                // frame_00001.png, frame_00002.png, ...
  std::vector<double> seconds;  // the presentation time of each (from the video's start, as ffmpeg reports it:
                                // import/frame_times.h); NaN when ffmpeg gave none
  double frame_rate = 0;        // ffprobe's average frames per second (else frames over duration; 0: unknown)
};

// Writes the frames into `folder` (which exists) as frame_00001.png, ... Error naming the video when it cannot
// be read (ffprobe/ffmpeg missing, not a video, no frames).
VideoFrames extract_video_frames(const std::string& video, const std::string& folder, const VideoFrameOptions& options);

// One line when the video has fewer frames than were asked for ("clip.mp4 has only 10 frames, fewer than
// --frames 60 asks for: all 10 taken"), else "".
std::string short_video_note(const std::string& video, const VideoFrames& frames, const VideoFrameOptions& options);

// The frame indices to take from `count` frames: `wanted` windows of equal length, `per_window` candidates
// spread within each (all frames when there are fewer): candidate m of all is frame
// floor((2m + 1) count / (2 windows per_window)), and candidates are at least a frame apart.
std::vector<std::vector<long>> frame_windows(long count, int wanted, int per_window);

// ffmpeg's `select` expression (commas escaped for a filter graph) true for exactly the frames frame_windows
// gives, with constants only: exact in ffmpeg's doubles for `count` up to 10^9.
std::string select_expression(long count, int wanted, int per_window);

// The variance of the 4-neighbour Laplacian of the image's grey levels (0..255).
double laplacian_variance(const Rgba8Image& image);
// The same of `width` x `height` pixels of `channels` bytes each, red green blue first.
double laplacian_variance(int width, int height, const uint8_t* pixels, int channels);

// The PAM images ffmpeg writes one after another (`-f image2pipe -c:v pam -pix_fmt rgb24`), read as they come
// in pieces of any size: each a header ("P7", WIDTH, HEIGHT, DEPTH 3, MAXVAL 255, TUPLTYPE RGB, ENDHDR) and
// width x height x 3 bytes. Only the frames `wanted` says yes to are copied; each is handed to `on_frame` with
// its index (from 0). A header that is not that, or a size beyond kMaxImagePixels, is Error naming `source`.
class PamFrames {
 public:
  using OnFrame = std::function<bool(long index, int width, int height, const uint8_t* rgb)>;
  PamFrames(std::string source, std::function<bool(long)> wanted, OnFrame on_frame)
      : source_(std::move(source)), wanted_(std::move(wanted)), on_frame_(std::move(on_frame)) {}
  // False once `on_frame` returned false (nothing more is wanted).
  bool feed(const char* data, size_t size);
  long frames() const { return index_; }                                   // frames read whole
  bool mid_frame() const { return in_header_ ? !header_.empty() : true; }  // the stream stopped inside a frame

 private:
  void parse_header();
  std::string source_;
  std::function<bool(long)> wanted_;
  OnFrame on_frame_;
  std::string header_;
  bool in_header_ = true, keep_ = false;
  int width_ = 0, height_ = 0;
  size_t body_ = 0, got_ = 0;  // bytes of this frame's pixels, and read so far
  std::vector<uint8_t> pixels_;
  long index_ = 0;
};

}  // namespace lact
