// lact import: a folder of photos or a video made into a posed scene (COLMAP's sparse/0 + images/) that
// `lact render` and `lact view` read (import/colmap_import.h).
#include <cstdio>
#include <filesystem>
#include <memory>

#include "app/commands.h"
#include "app/flags.h"
#include "app/unused_flags.h"
#include "import/colmap_import.h"

namespace lact::app {

namespace {

// lact's own path, so that the printed commands run as pasted whether or not lact is on PATH. The kernel
// adds " (deleted)" to the link when the file was replaced while lact ran (a rebuild, an upgrade): the path
// itself, which names the new lact, is what runs as pasted.
std::string this_program() {
  std::error_code error;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
  const std::string deleted = " (deleted)";
  if (self.size() > deleted.size() && self.compare(self.size() - deleted.size(), deleted.size(), deleted) == 0)
    self.resize(self.size() - deleted.size());
  return error ? "lact" : self;
}

}  // namespace

void add_import_command(CLI::App& app) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* command = app.add_subcommand(
      "import",
      "Make a posed scene from a folder of photos or a video with COLMAP (sparse/0 + images/, as lact reads)");
  command->add_option("input", o->input, "A folder of PNG/JPEG photos, or a video file")->required();
  command->add_option("-o,--output", o->output, "The scene folder to write (never replaced without --force)")
      ->required();
  command->add_flag("--force", o->force, "Replace an existing output folder");
  command->add_option("--max-size", o->max_size, "Long side of the images written into the scene (0: as they are)")
      ->capture_default_str();
  command
      ->add_option("--colmap-size", o->colmap_size,
                   "Long side of the images COLMAP estimates the cameras on, never below --max-size (0: as they "
                   "are); the model is rescaled to the scene's images")
      ->capture_default_str();
  command
      ->add_option("--camera-model", o->camera_model,
                   "COLMAP camera model (any case): SIMPLE_RADIAL, RADIAL, OPENCV, PINHOLE, SIMPLE_PINHOLE; for a "
                   "fisheye lens OPENCV_FISHEYE, SIMPLE_RADIAL_FISHEYE, RADIAL_FISHEYE")
      ->capture_default_str();
  command
      ->add_option("--matcher", o->matcher,
                   "exhaustive | sequential | auto (exhaustive up to 150 photos; sequential for more and video)")
      ->capture_default_str();
  command->add_option("--frames", o->frames, "Video: frames spread evenly over it (at most 100000)")
      ->capture_default_str()
      ->check(CLI::Range(3, 100000));
  command->add_option("--fps", o->fps, "Video: frames per second of video instead of --frames")
      ->check(finite_range(0.001, 1000));
  command->add_flag("--sharpest", o->sharpest, "Video: the sharpest of 3 candidate frames for each frame");
  command
      ->add_option("--max-seconds", o->max_seconds,
                   "Stop a video's frame extraction (ffmpeg) after this long, and COLMAP's steps after this long "
                   "in all (0: no limit)")
      ->capture_default_str()
      ->check(finite_range(0, 1e7));
  command
      ->add_option("--stall-minutes", o->stall_minutes,
                   "Stop COLMAP (or ffmpeg) when it prints nothing and makes no progress this long (0: never)")
      ->capture_default_str()
      ->check(finite_range(0, 10080));
  command
      ->add_option("--min-registered", o->min_registered,
                   "Fail when COLMAP poses fewer than this fraction of the images")
      ->capture_default_str();
  command->add_option("--colmap", o->colmap, "The colmap program (a name on PATH or a path)")->capture_default_str();
  command->add_flag("-q,--quiet", o->quiet, "No progress lines");
  command->callback([o, command]() {
    std::error_code ec;
    if (std::filesystem::is_directory(o->input, ec))  // every photo is used: a frame flag would do nothing
      refuse_unused_flags(*command, {"--frames", "--fps", "--sharpest"},
                          "is for a video input; " + o->input + " is a folder of photos (all of them are used)");
    const ImportSummary summary = import_scene(*o);
    std::fputs(import_summary_text(summary, this_program()).c_str(), stdout);
  });
}

}  // namespace lact::app
