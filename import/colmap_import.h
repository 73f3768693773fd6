// `lact import`: a folder of photos or a video made into a posed scene in the COLMAP layout lact reads
// (sparse/0 + images/), by running COLMAP. The scene is built in a hidden folder beside the output and renamed
// into place at the end, so an interrupted or failed import leaves nothing under the output's name; an existing
// output is replaced only with `force`. A signal (Ctrl-C) removes that folder (system/interrupt_cleanup.h).
#pragma once

#include <string>
#include <vector>

#include "import/import_images.h"

namespace lact {

struct ImportOptions {
  std::string input, output;
  std::string colmap = "colmap";  // the program (PATH) or its path
  // In any case (`opencv` is OPENCV).
  std::string camera_model = "SIMPLE_RADIAL";
  std::string matcher = "auto";  // exhaustive | sequential | auto (exhaustive up to 150 photos, else sequential)
  int max_size = 1600;           // the long side of the images written into the scene (0: as they are)
  // The long side of the images COLMAP works on, never below max_size (0: as they are): a small --max-size
  // does not shrink what the focal length is estimated from (the model is rescaled to the scene's images).
  int colmap_size = 1600;
  int frames = 60;              // video: frames spread evenly over it
  double fps = 0;               // video: frames per second instead (> 0)
  bool sharpest = false;        // video: the sharpest of 3 candidates per frame
  double max_seconds = 0;       // a video's ffmpeg, then COLMAP in all (0: none)
  double stall_minutes = 30;    // a COLMAP step (or ffmpeg) with no output and no progress this long is stopped
  double min_registered = 0.5;  // fewer registered images than this fraction is a failure
  bool force = false, quiet = false;
};

struct ImportSummary {
  std::string output;  // the scene's folder (absolute)
  bool video = false;
  int found = 0, used = 0, registered = 0;
  std::vector<SkippedFile> skipped;         // the files that were not images lact reads, with why
  std::string note;                         // said once in the summary: a video with fewer frames than asked, or ""
  std::string frames_note;                  // a video: the span of it the frames cover (import/frame_times.h), or ""
  std::string cameras_note;                 // several cameras (import/camera_groups.h), or ""
  int colmap_width = 0, colmap_height = 0;  // the first image as COLMAP saw it, when larger than in images/
  double reprojection_px = -1;              // mean reprojection error (< 0: unknown)
  double extent = 0;                        // the diagonal of the bounding box of the camera centres
  int width = 0, height = 0;                // of the first image
  double seconds = 0;

  std::vector<std::string> unregistered;  // the images COLMAP could not place, in name order
  std::vector<std::string> views;         // the registered images (in images/), in the order render numbers views
};

ImportSummary import_scene(const ImportOptions& options);

// The summary lines and the commands to run next, as pasted: `program` (lact's own path) fetching the scene
// model that fits the capture when it is not cached, then rendering and viewing the scene with it.
std::string import_summary_text(const ImportSummary& summary, const std::string& program);

}  // namespace lact
