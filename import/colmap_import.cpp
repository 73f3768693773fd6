#include "import/colmap_import.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "datasets/colmap_model.h"
#include "datasets/layouts.h"
#include "datasets/view_selection.h"
#include "import/camera_groups.h"
#include "import/colmap_steps.h"
#include "import/frame_times.h"
#include "import/import_images.h"
#include "import/model_rescale.h"
#include "import/photo_order.h"
#include "import/video_frames.h"
#include "pipeline/model_cache.h"
#include "pipeline/official_models.h"
#include "pipeline/scene_selection.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/interrupt_cleanup.h"
#include "system/terminal_text.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

constexpr int kExhaustiveUpTo = 150;  // photos; above this (and for video) sequential matching

fs::path clean(const fs::path& p) {
  fs::path out = fs::absolute(p).lexically_normal();
  if (out.filename().empty() && out.has_parent_path()) out = out.parent_path();
  return out;
}

bool is_within(const fs::path& inner, const fs::path& outer) {
  const auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

// The options as the import uses them: the camera model in COLMAP's upper case (`opencv` is OPENCV), refused
// as typed when it is not one lact reads.
ImportOptions normalized(const ImportOptions& options) {
  static const std::array<const char*, 8> models = {
      "SIMPLE_PINHOLE", "PINHOLE",        "SIMPLE_RADIAL",         "RADIAL",
      "OPENCV",         "OPENCV_FISHEYE", "SIMPLE_RADIAL_FISHEYE", "RADIAL_FISHEYE"};
  ImportOptions o = options;
  for (char& c : o.camera_model) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (std::find(models.begin(), models.end(), o.camera_model) == models.end())
    throw Error("--camera-model", "'" + options.camera_model.substr(0, 40) +
                                      "' is not one lact reads: SIMPLE_RADIAL (default), RADIAL, OPENCV, PINHOLE, "
                                      "SIMPLE_PINHOLE, or for a fisheye lens OPENCV_FISHEYE, SIMPLE_RADIAL_FISHEYE, "
                                      "RADIAL_FISHEYE (any case)");
  return o;
}

void check_options(const ImportOptions& o) {
  if (o.matcher != "auto" && o.matcher != "exhaustive" && o.matcher != "sequential")
    throw Error("--matcher", "must be exhaustive, sequential or auto");
  if (o.max_size != 0 && o.max_size < 64) throw Error("--max-size", "must be 0 (no cap) or at least 64 pixels");
  if (o.colmap_size != 0 && o.colmap_size < 64)
    throw Error("--colmap-size", "must be 0 (no cap) or at least 64 pixels");
  if (!(o.min_registered >= 0 && o.min_registered <= 1)) throw Error("--min-registered", "must be in [0, 1]");
  if (o.frames < 3 || o.frames > kMaxVideoFrames)
    throw Error("--frames", "must be 3 to " + std::to_string(kMaxVideoFrames));
  if (!(o.stall_minutes >= 0 && o.stall_minutes <= 10080))
    throw Error("--stall-minutes", "must be 0 (no limit) to 10080 (a week)");
}

// `p` where it really is: absolute, with every link in the part that exists resolved (the rest as typed).
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(fs::absolute(p), ec);
  return ec ? clean(p) : clean(real);
}

// The input and the output never overlap, compared as typed and where links lead: a link to the photos (or a
// link on the way to the output) must not let --force remove the photos or write the scene among them.
void refuse_overlap(const ImportOptions& o) {
  for (const fs::path& out : {clean(o.output), resolved(o.output)})
    for (const fs::path& in : {clean(o.input), resolved(o.input)})
      if (is_within(in, out) || is_within(out, in))
        throw Error(o.output,
                    "is the input, inside it or holds it (" + in.string() + "): name a folder apart from " + o.input);
}

// What an import writes into its scene folder; --force replaces a folder holding nothing else.
bool written_by_import(const std::string& name) {
  return name == "images" || name == "sparse" || name == "colmap.log" || name == "frames.json";
}

// --force replaces a file, a link (not what it points to) or a scene folder an import made (an empty one too);
// a folder holding anything else is the user's, and is never removed.
void check_replaceable(const fs::path& out, const std::string& shown) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(out, ec);
  if (!fs::exists(status) || fs::is_symlink(status) || fs::is_regular_file(status)) return;
  if (!fs::is_directory(status))
    throw Error(shown,
                "exists and is not a file or folder (a FIFO, device or socket): not replaced, even with --force");
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!written_by_import(name))
      throw Error(shown, "holds '" + name +
                             "', which lact import did not write: --force replaces only a scene folder an import made "
                             "(remove the folder yourself, or choose another)");
  }
  if (ec) throw Error(shown, "cannot list it to replace it (" + ec.message() + ")");
}

// COLMAP's stall limit in seconds (0: none).
double stall_seconds(const ImportOptions& o) { return o.stall_minutes * 60; }

// The folders made on the way to the output (-o a/b/scene where a/ did not exist), removed again when the
// import fails, deepest first and each only while empty (OUT.colmap.log kept beside the output keeps its folder):
// a failed import leaves nothing else it made.
class MadeFolders {
 public:
  void make(const fs::path& folder) {
    std::error_code ec;
    for (fs::path p = folder; !p.empty() && !fs::exists(fs::symlink_status(p, ec)); p = p.parent_path()) {
      missing_.push_back(p);
      if (p == p.parent_path()) break;
    }
    fs::create_directories(folder, ec);
  }
  void keep() { missing_.clear(); }
  std::vector<std::string> folders() const {  // deepest first
    std::vector<std::string> paths;
    for (const fs::path& p : missing_) paths.push_back(p.string());
    return paths;
  }
  ~MadeFolders() {
    std::error_code ec;
    for (const fs::path& p : missing_)
      if (!fs::remove(p, ec)) break;  // not empty (or gone): its parents are not ours to empty
  }

 private:
  std::vector<fs::path> missing_;  // deepest first
};

// The output's absolute path, after refusing an existing one (without --force, or one that is not a scene), one
// that overlaps the input, and one under /dev, /proc or /sys. Its folder is made (`made`) where missing.
fs::path check_output(const ImportOptions& o, MadeFolders& made) {
  if (o.output.empty()) throw Error("-o", "name the scene folder to write");
  const fs::path out = clean(o.output);
  if (under_system_folder(out.string()))
    throw Error(o.output, "is under /dev, /proc or /sys: not a folder lact writes, refused");
  refuse_overlap(o);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(out, ec)) && !o.force)
    throw Error(o.output, "already exists (pass --force to replace it)");
  check_replaceable(out, o.output);
  made.make(out.parent_path());
  if (!fs::is_directory(out.parent_path(), ec))
    throw Error(o.output, "its folder " + out.parent_path().string() + " cannot be made");
  return out;
}

// The hidden folder the scene is built in, removed unless release() was called.
// A signal ends lact without unwinding, so the folder of an interrupted import stays: the next import into the
// same folder removes those whose process is gone.
void remove_abandoned_partials(const fs::path& out) {
  const std::string prefix = "." + out.filename().string() + ".lact-import-";
  std::error_code ec;
  for (fs::directory_iterator it(out.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9) continue;
    if (::kill(std::stoi(pid), 0) != 0 && errno == ESRCH) {
      std::error_code remove_ec;
      fs::remove_all(it->path(), remove_ec);
    }
  }
}

class PartialScene {
 public:
  explicit PartialScene(const fs::path& out)
      : path_(out.parent_path() / ("." + out.filename().string() + ".lact-import-" + std::to_string(::getpid()))) {
    remove_abandoned_partials(out);
    std::error_code ec;
    fs::remove_all(path_, ec);
    if (!fs::create_directory(path_, ec))
      throw Error(path_.string(), "cannot create the working folder (" + ec.message() + ")");
    fs::create_directory(path_ / "images", ec);
  }
  ~PartialScene() {
    std::error_code ec;
    if (!released_) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  void release() { released_ = true; }

 private:
  fs::path path_;
  bool released_ = false;
};

// The camera centre -R^T t of a COLMAP image (q: world-to-camera, Hamilton, not necessarily unit).
std::array<double, 3> camera_centre(const ColmapImage& image) {
  double w = image.q[0], x = image.q[1], y = image.q[2], z = image.q[3];
  const double n = std::sqrt(w * w + x * x + y * y + z * z);
  w /= n, x /= n, y /= n, z /= n;
  const double r[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                          {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                          {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}};
  std::array<double, 3> c{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) c[i] -= r[j][i] * image.t[j];
  return c;
}

double centres_extent(const ColmapModel& model) {
  std::array<double, 3> lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
  for (const ColmapImage& image : model.images) {
    const std::array<double, 3> c = camera_centre(image);
    for (int i = 0; i < 3; ++i) lo[i] = std::min(lo[i], c[i]), hi[i] = std::max(hi[i], c[i]);
  }
  double d2 = 0;
  for (int i = 0; i < 3; ++i) d2 += (hi[i] - lo[i]) * (hi[i] - lo[i]);
  return model.images.empty() ? 0 : std::sqrt(d2);
}

// Keeps the model with the most registered images as sparse/0 (COLMAP writes one per disconnected part).
ColmapModel keep_largest_model(const fs::path& sparse) {
  std::error_code ec;
  std::vector<fs::path> models;
  for (fs::directory_iterator it(sparse, ec), end; !ec && it != end; it.increment(ec))
    if (is_colmap_model_folder(it->path())) models.push_back(it->path());
  ColmapModel best;
  fs::path best_path;
  for (const fs::path& m : models) {
    ColmapModel model = read_colmap_model(m);
    if (best_path.empty() || model.images.size() > best.images.size()) best = std::move(model), best_path = m;
  }
  for (const fs::path& m : models)
    if (m != best_path) fs::remove_all(m, ec);
  if (!best_path.empty() && best_path.filename() != "0") {
    fs::rename(best_path, sparse / "0");
    best.folder = sparse / "0";
  }
  return best;
}

std::vector<std::string> database_args(const fs::path& scene) {
  return {"--database_path", (scene / "database.db").string()};
}

// The folder COLMAP reads the images from: the estimation folder when some image is larger there.
fs::path colmap_images(const fs::path& scene, const ImportedImages& images) {
  return scene / (images.estimation ? "estimation" : "images");
}

// COLMAP's features: one run per camera group (import/camera_groups.h), each over its list of images with one
// shared camera; one run with a camera per image past kMaxCameraGroups groups.
void extract_features(ColmapSteps& steps, const fs::path& scene, const ImportOptions& o, const ImportedImages& images) {
  const std::vector<CameraGroup> groups = camera_groups(images.images);
  const bool one_run = groups.size() == 1 || groups.size() > kMaxCameraGroups;
  for (size_t g = 0; g < (one_run ? 1 : groups.size()); ++g) {
    std::vector<std::string> args = database_args(scene);
    for (const std::string& a :
         {std::string("--image_path"), colmap_images(scene, images).string(), std::string("--ImageReader.camera_model"),
          o.camera_model, std::string("--ImageReader.single_camera"),
          std::string(groups.size() == 1 || !one_run ? "1" : "0"), std::string("--SiftExtraction.use_gpu"),
          std::string("0")})
      args.push_back(a);
    const fs::path list = scene / ("camera_" + std::to_string(g + 1) + ".txt");
    if (!one_run) {
      std::string names;
      for (const std::string& name : groups[g].names) names += name + "\n";
      write_file_atomically(list.string(), names);
      for (const std::string& a : {std::string("--image_list_path"), list.string()}) args.push_back(a);
    }
    steps.run("feature_extractor", args, "features",
              static_cast<int>(one_run ? images.names.size() : groups[g].names.size()));
    std::error_code ec;
    fs::remove(list, ec);
  }
}

// COLMAP's three steps on the images: features, matches, the sparse model(s) in scene/sparse.
void run_colmap(ColmapSteps& steps, const fs::path& scene, const ImportOptions& o, const ImportedImages& images,
                bool video) {
  const int n = static_cast<int>(images.names.size());
  extract_features(steps, scene, o, images);
  const bool sequential = o.matcher == "sequential" || (o.matcher == "auto" && (video || n > kExhaustiveUpTo));
  std::vector<std::string> args = database_args(scene);
  for (const char* a : {"--SiftMatching.use_gpu", "0"}) args.push_back(a);
  if (!sequential)  // blocks of 10 images: a progress line per block rather than one for the whole match
    for (const char* a : {"--ExhaustiveMatching.block_size", "10"}) args.push_back(a);
  steps.run(sequential ? "sequential_matcher" : "exhaustive_matcher", args, "matching", n);
  fs::create_directory(scene / "sparse");
  args = database_args(scene);
  for (const std::string& a : {std::string("--image_path"), colmap_images(scene, images).string(),
                               std::string("--output_path"), (scene / "sparse").string()})
    args.push_back(a);
  steps.run("mapper", args, "mapping", n);
}

// The model analyzer's mean reprojection error in pixels, -1 when it printed none or no number of pixels that
// can be one (it is shown in the summary only: an odd line must not fail a finished import).
double mean_reprojection_error(ColmapSteps& steps, const fs::path& model) {
  std::string text = steps.run_for_line("model_analyzer", {"--path", model.string()}, "Mean reprojection error: ");
  if (text.size() >= 2 && text.compare(text.size() - 2, 2, "px") == 0) text.resize(text.size() - 2);
  if (text.empty() || text.size() > 32 || text.find_first_not_of("0123456789.eE+-") != std::string::npos) return -1;
  char* end = nullptr;
  const double pixels = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(pixels) && pixels >= 0 && pixels < 1e6 ? pixels : -1;
}

}  // namespace

namespace {

// Where COLMAP sees the images larger than they are written (scene/estimation, made), or none.
EstimationImages estimation_images(const ImportOptions& o, const fs::path& scene) {
  if (o.max_size == 0 || (o.colmap_size != 0 && o.colmap_size <= o.max_size)) return {};
  std::error_code ec;
  fs::create_directory(scene / "estimation", ec);
  return {(scene / "estimation").string(), o.colmap_size};
}

// The images COLMAP will see, in scene/images (and scene/estimation): the folder's photos, or frames taken
// from the video (frames.json says where in it each came from). The summary's `video`, `note` (a video shorter
// than asked) and `frames_note` are set here.
ImportedImages gather_images(const ImportOptions& o, const fs::path& scene, ImportSummary& s) {
  std::error_code ec;
  const fs::path in = clean(o.input);
  s.video = !fs::is_directory(in, ec);
  const EstimationImages estimation = estimation_images(o, scene);
  if (!s.video) return import_image_folder(in.string(), (scene / "images").string(), o.max_size, estimation);
  if (!fs::exists(in, ec)) throw Error(o.input, "no such folder or video file");
  if (!fs::is_regular_file(in, ec))
    throw Error(o.input,
                "is not a folder or a regular file (a FIFO, device or socket): name a folder of photos or a "
                "video file");
  const fs::path frames = scene / "frames";
  fs::create_directory(frames, ec);
  const int frame_side = estimation.folder.empty() ? o.max_size : o.colmap_size;  // the larger of the two
  const VideoFrameOptions options{o.frames, o.fps, o.sharpest, o.max_seconds, stall_seconds(o), frame_side, !o.quiet};
  const VideoFrames taken = extract_video_frames(in.string(), frames.string(), options);
  s.note = short_video_note(o.input, taken, options);
  ImportedImages images = import_image_folder(frames.string(), (scene / "images").string(), o.max_size, estimation);
  fs::remove_all(frames, ec);
  write_file_atomically((scene / "frames.json").string(), frame_times_json(in.string(), taken, images.names));
  s.frames_note = frame_span_text(o.input, taken, images.names);
  return images;
}

// "a.txt (not a PNG or JPEG (...)), b.jpg (undecodable (...))": the first `most` of them, then how many more.
std::string skipped_list(const std::vector<SkippedFile>& skipped, size_t most) {
  std::string text;
  for (size_t i = 0; i < std::min(most, skipped.size()); ++i)
    text += (i ? ", " : "") + skipped[i].name + " (" + skipped[i].reason + ")";
  if (skipped.size() > most) text += " and " + std::to_string(skipped.size() - most) + " more";
  return text;
}

void check_enough_images(const ImportOptions& o, const ImportedImages& images, bool video) {
  if (images.names.size() >= 3) return;
  std::string skipped;  // copies of a picture among them: a still video, a photo copied under other names
  if (!images.skipped.empty())
    skipped = "; skipped " + std::to_string(images.skipped.size()) + ": " + skipped_list(images.skipped, 3);
  if (video)
    throw Error(o.input, "the video gave " + std::to_string(images.names.size()) +
                             " frame(s); COLMAP needs at least 3 overlapping views: a longer video, or a folder of "
                             "photos" +
                             skipped);
  const std::string hint = images_subfolder_hint(clean(o.input).string());
  throw Error(o.input, "found " + std::to_string(images.names.size()) +
                           " image(s); COLMAP needs at least 3 overlapping photos" + skipped +
                           (hint.empty() ? "" : "; " + hint));
}

void check_registered(const ColmapModel& model, int used, double min_fraction) {
  const int registered = static_cast<int>(model.images.size());
  const int needed = std::max(3, static_cast<int>(std::ceil(min_fraction * used)));
  if (registered >= needed) return;
  throw Error("colmap mapper", "registered " + std::to_string(registered) + " of " + std::to_string(used) +
                                   " images (need " + std::to_string(needed) +
                                   "; --min-registered sets the fraction). Usual causes: too little texture or "
                                   "overlap between the photos, motion blur, or a moving subject");
}

// The checks `lact render` makes of a COLMAP scene, made on the one COLMAP wrote: its reader (camera models it
// reads, focal lengths, poses, numbers float32 carries) and every registered image there, so that an import
// reported as done renders. Render's line, the working folder's path left out of it (sparse/0/images.txt).
// The views' image names, in the order render numbers them.
std::vector<std::string> check_scene_renders(const fs::path& scene) {
  try {
    const Scene read = read_colmap_scene(scene, {});
    std::vector<std::string> names;
    for (const SceneView& view : read.views) {
      require_regular_file(view.image_path);
      names.push_back(fs::path(view.image_path).filename().string());  // images/ is flat
    }
    return names;
  } catch (const Error& e) {
    std::string text = e.what();
    const std::string working = scene.string() + "/";
    for (size_t at; (at = text.find(working)) != std::string::npos;) text.erase(at, working.size());
    throw Error("colmap mapper", "wrote a scene lact render refuses: " + text);
  }
}

// The files the import skipped, for the log (the summary shows the first few).
std::string skipped_log(const std::vector<SkippedFile>& skipped) {
  if (skipped.empty()) return "";
  std::string text = "lact import skipped " + std::to_string(skipped.size()) + " file(s):\n";
  for (const SkippedFile& f : skipped) text += "  " + f.name + ": " + f.reason + "\n";
  return text;
}

// The images COLMAP could not place: those of `images` the model does not hold, in name order. All of them in
// the log; the summary names the first few.
std::vector<std::string> unregistered_images(const ImportedImages& images, const ColmapModel& model,
                                             ColmapSteps& steps) {
  std::vector<std::string> registered;
  for (const ColmapImage& image : model.images) registered.push_back(image.name);
  std::sort(registered.begin(), registered.end());
  std::vector<std::string> missing;
  for (const std::string& name : images.names)
    if (!std::binary_search(registered.begin(), registered.end(), name)) missing.push_back(name);
  if (missing.empty()) return missing;
  std::string text = "\nlact import: COLMAP did not register " + std::to_string(missing.size()) + " image(s):\n";
  for (const std::string& name : missing) text += "  " + name + "\n";
  steps.log(text);
  return missing;
}

// COLMAP on the gathered images, the largest model kept as sparse/0 and checked as render checks it; the
// summary's COLMAP fields.
void reconstruct(const ImportOptions& o, const fs::path& scene, const ImportedImages& images, bool video,
                 ImportSummary& s) {
  ColmapSteps steps(o.colmap, (scene / "colmap.log").string(), o.max_seconds, stall_seconds(o),
                    (scene / "database.db").string(), o.quiet);
  steps.log(skipped_log(images.skipped));
  run_colmap(steps, scene, o, images, video);
  const ColmapModel model = keep_largest_model(scene / "sparse");
  check_registered(model, s.used, o.min_registered);
  if (images.estimation) {  // the model of the estimation folder's images, carried over to images/'s sizes
    std::map<std::string, std::pair<int, int>> sizes;
    for (const ImportedImage& image : images.images) sizes[image.name] = {image.width, image.height};
    rescale_colmap_model(scene / "sparse" / "0", sizes);
  }
  s.views = check_scene_renders(scene);
  s.registered = static_cast<int>(model.images.size());
  s.unregistered = unregistered_images(images, model, steps);
  s.extent = centres_extent(model);
  s.reprojection_px = mean_reprojection_error(steps, scene / "sparse" / "0");
}

// The log a failed import keeps beside the output.
fs::path failure_log(const fs::path& out) { return out.parent_path() / (out.filename().string() + ".colmap.log"); }

// A COLMAP failure keeps its log beside the output (OUT.colmap.log), since the partial scene is removed. The
// files lact skipped are named too (fewer photos than the user took may be why).
[[noreturn]] void fail_with_log(const Error& e, const fs::path& scene, const fs::path& out,
                                const std::vector<SkippedFile>& skipped) {
  std::error_code ec;
  const fs::path log = failure_log(out);
  std::string text = e.what();
  if (!skipped.empty())
    text += "; lact skipped " + std::to_string(skipped.size()) + " file(s): " + skipped_list(skipped, 5);
  if (!fs::exists(scene / "colmap.log", ec)) throw Error(text);
  fs::rename(scene / "colmap.log", log, ec);
  throw Error(text + (ec ? "" : " (COLMAP's output: " + log.string() + ")"));
}

// A log a failed import left beside the output, which the scene it now made supersedes (lact's own file: its
// name is the output's, and every failed import replaces it without --force too).
void remove_stale_failure_log(const fs::path& out) {
  std::error_code ec;
  const fs::path log = failure_log(out);
  const fs::file_status status = fs::symlink_status(log, ec);
  if (fs::is_regular_file(status) || fs::is_symlink(status)) fs::remove(log, ec);
}

void move_into_place(const fs::path& scene, const fs::path& out, bool force) {
  std::error_code ec;
  fs::remove(scene / "database.db", ec);
  fs::remove_all(scene / "estimation", ec);
  if (fs::exists(fs::symlink_status(out, ec))) {
    if (!force) throw Error(out.string(), "appeared while this import worked (pass --force to replace it)");
    check_replaceable(out, out.string());  // again: it may have changed while COLMAP worked
    fs::remove_all(out, ec);
    if (ec) throw Error(out.string(), "cannot remove it to replace it (" + ec.message() + ")");
  }
  fs::rename(scene, out, ec);
  if (ec) throw Error(out.string(), "cannot move the scene into place (" + ec.message() + ")");
}

// A line per skipped file, the first 20 (the scene's colmap.log lists them all).
std::string skipped_lines(const ImportSummary& s) {
  constexpr size_t kShown = 20;
  std::string text;
  for (size_t i = 0; i < std::min(kShown, s.skipped.size()); ++i)
    text += "  skipped " + terminal_text(s.skipped[i].name) + ": " + terminal_text(s.skipped[i].reason) + "\n";
  if (s.skipped.size() > kShown)
    text += "  and " + std::to_string(s.skipped.size() - kShown) + " more, listed in " + terminal_text(s.output) +
            "/colmap.log\n";
  return text;
}

// The images COLMAP could not place: the first few by name, and where all of them are listed.
std::string unregistered_line(const ImportSummary& s) {
  constexpr size_t kShown = 5;
  if (s.unregistered.empty()) return "";
  std::string text = "  not registered (COLMAP could not place them): ";
  for (size_t i = 0; i < std::min(kShown, s.unregistered.size()); ++i)
    text += (i ? ", " : "") + terminal_text(s.unregistered[i]);
  if (s.unregistered.size() > kShown)
    text += " and " + std::to_string(s.unregistered.size() - kShown) + " more, all listed in " +
            terminal_text(s.output) + "/colmap.log";
  return text + "\n";
}

// A path as one word for a POSIX shell: as it is when plain, else in single quotes.
std::string shell_word(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-") ==
                           std::string::npos)
    return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The photos' names out of capture order (shot 10.jpg before shot 2.jpg), said once on stderr.
void warn_about_name_order(const ImportedImages& images, bool video) {
  const std::string warning = video ? "" : name_order_warning(images.names);
  if (!warning.empty()) std::fprintf(stderr, "lact: warning: %s\n", terminal_text(warning).c_str());
}

}  // namespace

ImportSummary import_scene(const ImportOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const ImportOptions o = normalized(options);
  check_options(o);
  find_colmap(o.colmap);  // before the frames of a long video are taken, not after
  MadeFolders made;       // destroyed after `partial`: its folder is inside them
  const fs::path out = check_output(o, made);
  PartialScene partial(out);
  std::optional<InterruptCleanup> on_signal(std::in_place, partial.path().string(), made.folders(),
                                            "lact import: interrupted: nothing kept (the working folder was removed)");
  ImportSummary s;
  s.output = out.string();
  const ImportedImages images = gather_images(o, partial.path(), s);
  check_enough_images(o, images, s.video);
  warn_about_name_order(images, s.video);
  s.found = images.files, s.skipped = images.skipped, s.used = static_cast<int>(images.names.size());
  s.width = images.width, s.height = images.height;
  s.cameras_note = camera_groups_text(camera_groups(images.images));
  if (images.estimation && !images.images.empty())
    s.colmap_width = images.images[0].colmap_width, s.colmap_height = images.images[0].colmap_height;
  try {
    reconstruct(o, partial.path(), images, s.video, s);
  } catch (const Error& e) {
    fail_with_log(e, partial.path(), out, images.skipped);
  }
  move_into_place(partial.path(), out, o.force);
  on_signal.reset();  // the scene is in place: a signal from here on leaves it
  partial.release();
  made.keep();
  remove_stale_failure_log(out);
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

namespace {

// The input view count of the printed recipe: the model's, at most the registered views less an eighth.
int recipe_inputs(const ImportSummary& s, const OfficialModel& m) {
  const int targets = std::max(1, s.registered / 8);
  return std::max(1, std::min(m.input_views, s.registered - targets));
}

// Which photos the printed render line holds out as test views, by the number its report gives each view and
// by name: the report and the images it writes number views, and a user judging a score needs the photo.
std::string held_out_line(const ImportSummary& s, int inputs) {
  constexpr size_t kShown = 8;
  if (s.views.empty() || inputs >= static_cast<int>(s.views.size())) return "";
  Scene scene;  // select_views needs only the count for uniform:N and rest
  scene.views.resize(s.views.size());
  const std::vector<int> in = select_views("uniform:" + std::to_string(inputs), scene, false, {}, 0, "--inputs");
  const std::vector<int> held = select_views("rest", scene, true, in, 0, "--targets");
  std::string text = "test views held out of the inputs below, to be scored (view: photo): ";
  for (size_t i = 0; i < std::min(kShown, held.size()); ++i)
    text += (i ? ", " : "") + std::to_string(held[i]) + ": " + terminal_text(s.views[held[i]]);
  if (held.size() > kShown) text += " and " + std::to_string(held.size() - kShown) + " more";
  return text + "\n";
}

// The share of a width x height image that --size size_height x size_width crops (render covers the size, then
// crops the centre), from 0 to 1.
double cropped_share(int width, int height, int size_height, int size_width) {
  if (width <= 0 || height <= 0) return 0;
  const double scale = std::max(static_cast<double>(size_width) / width, static_cast<double>(size_height) / height);
  return 1 - static_cast<double>(size_width) * size_height / (scale * width * scale * height);
}

// When the recipe's size crops a visible share of each image (a portrait video with the square model): how much,
// and the size that keeps the whole image (the model's pixel count at the images' aspect, lact render's size
// without --size); "" when it crops less than 1%.
std::string crop_line(const ImportSummary& s, const OfficialModel& m) {
  const double share = cropped_share(s.width, s.height, m.height, m.width);
  if (share < 0.01) return "";
  const auto [h, w] = default_size(static_cast<int64_t>(m.height) * m.width, s.height, s.width, 8);
  const bool sides = static_cast<double>(s.width) / s.height > static_cast<double>(m.width) / m.height;
  char text[400];
  std::snprintf(text, sizeof text,
                "--size %dx%d below crops %.0f%% of each %dx%d image (%s); to keep the whole image, use --size %dx%d "
                "instead (the model's pixel count at the images' aspect, a shape it was not trained at)\n",
                m.height, m.width, 100 * share, s.width, s.height, sides ? "its sides" : "its top and bottom", h, w);
  return text;
}

// What to run next, as pasted: the scene model that fits the capture (pipeline/official_models.h), its fetch
// line when it is not cached, and the recipe scene models want: their input view count (at most what the
// capture leaves after an eighth for targets), their training size, poses normalised from the inputs.
std::string next_lines(const ImportSummary& s, const std::string& program) {
  const OfficialModel& m = scene_model_for(s.width, s.height);
  bool cached = false;
  try {
    cached = cached_model(model_cache_dir(), m.name).has_value();
  } catch (const Error&) {  // no cache folder to look in, or a record lact did not write: fetch says which
  }
  const int inputs = recipe_inputs(s, m);
  const std::string lact = shell_word(program);
  const std::string size = std::to_string(m.height) + "x" + std::to_string(m.width);
  const std::string flags =
      " --model " + m.name + " --data " + shell_word(s.output) + " --inputs uniform:" + std::to_string(inputs);
  const std::string recipe = " --size " + size + " --normalize-poses inputs";
  const std::string status = cached ? "cached" : "about " + size_text(m.approx_bytes) + " to download";
  char head[320];
  std::snprintf(head, sizeof head,
                "next: the scene model %s (trained at %s with %d input views; %s), %d of the %d registered views as "
                "inputs:\n",
                m.name.c_str(), size.c_str(), m.input_views, status.c_str(), inputs, s.registered);
  std::string text = held_out_line(s, inputs) + crop_line(s, m) + head;
  if (!cached) text += "  " + lact + " model fetch " + m.name + "\n";
  text += "  " + lact + " render" + flags + " --targets rest" + recipe + " --out out\n";
  text += "  " + lact + " view" + flags + recipe + "\n";
  return text;
}

}  // namespace

std::string import_summary_text(const ImportSummary& s, const std::string& program) {
  char line[512];
  std::string text;
  std::snprintf(line, sizeof line, "%d %s, %d used (%d skipped), %d registered (%.0f%%)\n", s.found,
                s.video ? "frames" : "files", s.used, static_cast<int>(s.skipped.size()), s.registered,
                100.0 * s.registered / std::max(1, s.used));
  text += terminal_text(s.output) + ": " + line;
  if (!s.note.empty()) text += "  " + terminal_text(s.note) + "\n";
  if (!s.frames_note.empty()) text += "  " + terminal_text(s.frames_note) + "\n";
  if (!s.cameras_note.empty()) text += "  " + s.cameras_note + "\n";
  text += skipped_lines(s);
  text += unregistered_line(s);
  char error[64] = "unknown";
  if (s.reprojection_px >= 0) std::snprintf(error, sizeof error, "%.4g px", s.reprojection_px);
  if (s.colmap_width > 0) {  // COLMAP's numbers are of the larger images it worked on
    std::snprintf(line, sizeof line,
                  "COLMAP worked on the images at %dx%d (the first; --colmap-size), the model "
                  "rescaled to the %dx%d written (--max-size)\n",
                  s.colmap_width, s.colmap_height, s.width, s.height);
    text += "  " + std::string(line);
    std::snprintf(error + std::strlen(error), sizeof error - std::strlen(error), " at %dx%d", s.colmap_width,
                  s.colmap_height);
  }
  std::snprintf(line, sizeof line,
                "mean reprojection error %s, extent %.3g (the cameras' bounding-box diagonal), %.0f s\n", error,
                s.extent, s.seconds);
  return text + line + next_lines(s, program);
}

}  // namespace lact
