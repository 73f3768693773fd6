// COLMAP sparse models as a scene (datasets/colmap_model.h parses them). COLMAP stores world-to-camera poses as a
// Hamilton quaternion (qw qx qy qz) and a translation, in OpenCV camera axes (x right, y down, z forward): the
// engine's camera-to-world is [R^T | -R^T t]. Intrinsics are pixels at the camera's width x height, principal
// point in COLMAP's convention (the image spans [0, W] x [0, H], pixel centres at +0.5), which is LaCT's; lens
// distortion (SIMPLE_RADIAL, RADIAL, OPENCV, FULL_OPENCV and the fisheyes OPENCV_FISHEYE, SIMPLE_RADIAL_FISHEYE,
// RADIAL_FISHEYE) goes into LensDistortion and the images are undistorted on load as nerfstudio's are. Views are sorted
// by image name (byte order), so indices do not depend on the order COLMAP registered the images in.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "datasets/colmap_model.h"
#include "datasets/layouts.h"
#include "system/error.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

std::string shown(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", v);
  return text;
}

// Absolute and normal, without a trailing separator ("a/b/" -> "/.../a/b").
fs::path clean(const fs::path& p) {
  fs::path out = fs::absolute(p).lexically_normal();
  if (out.filename().empty() && out.has_parent_path()) out = out.parent_path();
  return out;
}

bool is_model_file(const fs::path& p) {
  const std::string name = p.filename().string();
  for (const char* stem : {"cameras", "images", "points3D", "rigs", "frames"})
    for (const char* ext : {".bin", ".txt"})
      if (name == std::string(stem) + ext) return true;
  return false;
}

// The folder a model's images/ is looked for in: X for X/sparse/N and X/sparse, else the model folder.
fs::path project_root(const fs::path& model) {
  if (model.filename() == "sparse") return model.parent_path();
  if (model.parent_path().filename() == "sparse") return model.parent_path().parent_path();
  return model;
}

// The model folder and project root for `path`; false when `path` holds no COLMAP model.
bool locate_model(const fs::path& path, fs::path& model, fs::path& root) {
  std::error_code ec;
  const fs::path p = clean(path);
  if (fs::is_directory(p, ec)) {
    if (is_colmap_model_folder(p)) return model = p, root = project_root(p), true;
    for (const char* sub : {"sparse/0", "sparse"})
      if (is_colmap_model_folder(p / sub)) return model = p / sub, root = p, true;
    return false;
  }
  if (is_model_file(p) && is_colmap_model_folder(p.parent_path()))
    return model = p.parent_path(), root = project_root(model), true;
  return false;
}

// --images DIR, else images/ (images_N with --downscale N) in the project root or the model folder.
fs::path images_folder(const fs::path& model, const fs::path& root, const ReadOptions& o) {
  std::error_code ec;
  if (!o.images.empty()) {
    if (o.downscale > 1)
      throw Error("--images",
                  "is the folder the images are read from: name the downscaled folder itself (e.g. "
                  "--images DIR/images_" +
                      std::to_string(o.downscale) + ") instead of adding --downscale");
    if (!fs::is_directory(o.images, ec)) throw Error(o.images, "--images: no such folder");
    return clean(o.images);
  }
  const std::string name = o.downscale > 1 ? "images_" + std::to_string(o.downscale) : "images";
  for (const fs::path& candidate : {root / name, model / name})
    if (fs::is_directory(candidate, ec)) return candidate;
  throw Error(model.string(),
              "a COLMAP model without an " + name + "/ folder beside it (looked in " + (root / name).string() +
                  "): pass --images DIR" +
                  (o.downscale > 1 ? " naming the folder of downscaled images, without --downscale" : ""));
}

// The view template of a COLMAP camera: its pinhole camera (undistorted intrinsics when distorted), distortion
// and the camera of the images on disk. Pose left to the image.
SceneView camera_view(const ColmapCamera& c, const std::string& where) {
  const std::vector<double>& p = c.params;
  SceneView view;
  LensDistortion& d = view.distortion;
  double fx = p[0], fy = p[0], cx = p[1], cy = p[2];
  switch (c.model) {
    case 0:
      break;  // SIMPLE_PINHOLE f cx cy
    case 2:
      d.k1 = p[3];
      break;  // SIMPLE_RADIAL f cx cy k
    case 3:
      d.k1 = p[3], d.k2 = p[4];
      break;  // RADIAL f cx cy k1 k2
    case 1:
    case 4:
    case 6:  // PINHOLE / OPENCV / FULL_OPENCV fx fy cx cy ...
      fy = p[1], cx = p[2], cy = p[3];
      if (c.model >= 4) d.k1 = p[4], d.k2 = p[5], d.p1 = p[6], d.p2 = p[7];
      if (c.model == 6) d.k3 = p[8], d.k4 = p[9], d.k5 = p[10], d.k6 = p[11];
      break;
    case 5:  // OPENCV_FISHEYE fx fy cx cy k1 k2 k3 k4
      fy = p[1], cx = p[2], cy = p[3];
      d.fisheye = true, d.k1 = p[4], d.k2 = p[5], d.k3 = p[6], d.k4 = p[7];
      break;
    case 8:  // SIMPLE_RADIAL_FISHEYE f cx cy k
    case 9:  // RADIAL_FISHEYE f cx cy k1 k2
      d.fisheye = true, d.k1 = p[3];
      if (c.model == 9) d.k2 = p[4];
      break;
    default:
      throw Error(where, "camera " + std::to_string(c.id) + " uses the " + colmap_model_name(c.model) +
                             " model, which lact does not read (it reads SIMPLE_PINHOLE, PINHOLE, SIMPLE_RADIAL, "
                             "RADIAL, OPENCV, FULL_OPENCV, OPENCV_FISHEYE, SIMPLE_RADIAL_FISHEYE, RADIAL_FISHEYE): "
                             "undistort the images with colmap image_undistorter first");
  }
  const std::string camera = where + " camera " + std::to_string(c.id);
  Camera& cam = view.camera;
  cam.width = c.width, cam.height = c.height;
  set_intrinsics(cam, fx, fy, cx, cy, camera);
  cam.c2w = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  cam.validate(camera);
  if (d.any()) {
    view.distorted_camera = cam;
    view.camera = undistorted_camera(cam, d, camera);
  }
  return view;
}

// The pinhole camera (or distortion) of every camera a registered image uses, by id.
std::map<uint32_t, SceneView> camera_views(const ColmapModel& model, const std::string& cameras_file) {
  std::set<uint32_t> used;
  for (const ColmapImage& image : model.images) used.insert(image.camera_id);
  std::map<uint32_t, SceneView> views;
  for (const ColmapCamera& c : model.cameras)
    if (used.count(c.id)) views.emplace(c.id, camera_view(c, cameras_file));
  return views;
}

// Counts "PINHOLE" -> 2, ... over the cameras registered images use, as "1 PINHOLE, 2 OPENCV".
std::string cameras_by_model(const ColmapModel& model, const std::map<uint32_t, SceneView>& used) {
  std::map<std::string, int> count;
  for (const ColmapCamera& c : model.cameras)
    if (used.count(c.id)) ++count[colmap_model_name(c.model)];
  std::string out;
  for (const auto& [name, n] : count) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  return out;
}

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* known : {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".tga", ".webp"})
    if (ext == known) return true;
  return false;
}

// Image files under `folder` (recursively, at most a million entries looked at) that the model did not register;
// -1 when the folder cannot be listed.
long long unregistered_images(const fs::path& folder, const std::set<std::string>& registered) {
  long long count = 0, seen = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
  if (ec) return -1;
  for (; it != end && seen < 1000000; it.increment(ec), ++seen) {
    if (ec) return -1;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec) || !is_image_file(it->path())) continue;
    count += !registered.count(it->path().lexically_relative(folder).generic_string());
  }
  return count;
}

// Lines for `lact info`: the model, its cameras by model, registered and unregistered images.
std::vector<std::string> model_notes(const ColmapModel& model, const std::map<uint32_t, SceneView>& used,
                                     const Scene& scene, const fs::path& images) {
  std::set<std::string> registered;
  long long missing = 0;
  for (const ColmapImage& image : model.images) registered.insert(image.name);
  std::error_code ec;
  for (const SceneView& v : scene.views) missing += !fs::exists(v.image_path, ec);
  const long long unregistered = unregistered_images(images, registered);
  std::vector<std::string> notes;
  notes.push_back("COLMAP model " + model.folder.string() + " (" + (model.binary ? "binary" : "text") +
                  "): " + std::to_string(used.size()) + " camera(s) in use: " + cameras_by_model(model, used) +
                  (model.cameras.size() > used.size()
                       ? " (" + std::to_string(model.cameras.size() - used.size()) + " more no registered image uses)"
                       : ""));
  notes.push_back(
      "images: " + std::to_string(model.images.size()) + " registered, " +
      (unregistered < 0 ? std::string("unregistered not counted") : std::to_string(unregistered) + " unregistered") +
      " in " + images.string() +
      (missing ? "; " + std::to_string(missing) + " registered image(s) missing there" : ""));
  return notes;
}

// Camera-to-world (OpenCV axes) of a COLMAP image: the quaternion normalised into R (world-to-camera), then
// [R^T | -R^T t]. A zero quaternion is refused.
std::array<double, 16> camera_to_world(const ColmapImage& image, const std::string& where) {
  const auto& q = image.q;
  const double norm = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (!(norm > 1e-12) || !std::isfinite(norm)) throw Error(where, "quaternion (qw qx qy qz) is zero or not finite");
  for (double t : image.t)  // |camera centre| = |t| for a rotation: the bound the camera check applies to it
    if (std::abs(t) > kMaxCameraPosition)
      throw Error(where, "field 'tvec' holds " + shown(t) + ", beyond +-" + shown(kMaxCameraPosition) +
                             " (more than float32 rays carry)");
  const double w = q[0] / norm, x = q[1] / norm, y = q[2] / norm, z = q[3] / norm;
  const double r[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
                       2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                       2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
  std::array<double, 16> c2w{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) c2w[i * 4 + j] = r[j * 3 + i];
    c2w[i * 4 + 3] = -(r[0 * 3 + i] * image.t[0] + r[1 * 3 + i] * image.t[1] + r[2 * 3 + i] * image.t[2]);
  }
  c2w[15] = 1;
  return c2w;
}

}  // namespace

std::string other_sparse_model(const fs::path& folder) {
  for (int n = 1; n < 10; ++n) {
    const fs::path model = folder / "sparse" / std::to_string(n);
    if (!is_colmap_model_folder(model)) continue;
    return ": sparse/" + std::to_string(n) +
           " holds one (COLMAP's mapper writes one model a group of connected images, the largest not always "
           "first): pass --data " +
           model.string() + " --images " + (folder / "images").string();
  }
  return "";
}

bool is_colmap_path(const fs::path& path) {
  fs::path model, root;
  return locate_model(path, model, root);
}

Scene read_colmap_scene(const fs::path& path, const ReadOptions& options) {
  fs::path model_folder, root;
  if (!locate_model(path, model_folder, root))
    throw Error(path.string(), "is not a COLMAP model (cameras + images .bin or .txt, or a folder with sparse/0)" +
                                   other_sparse_model(path));
  const ColmapModel model = read_colmap_model(model_folder);
  const std::string ext = model.binary ? ".bin" : ".txt";
  const std::string images_file = (model_folder / ("images" + ext)).string();
  const fs::path images = images_folder(model_folder, root, options);
  const std::map<uint32_t, SceneView> cameras = camera_views(model, (model_folder / ("cameras" + ext)).string());

  std::vector<const ColmapImage*> sorted;
  for (const ColmapImage& image : model.images) sorted.push_back(&image);
  std::sort(sorted.begin(), sorted.end(), [](const ColmapImage* a, const ColmapImage* b) { return a->name < b->name; });
  Scene scene;
  scene.source = model_folder.string();
  scene.name = root.filename().string();
  scene.layout = "colmap";
  for (const ColmapImage* image : sorted) {
    const std::string where = images_file + " image " + std::to_string(image->id) + " ('" + image->name + "')";
    SceneView view = cameras.at(image->camera_id);
    view.image_path = (images / image->name).lexically_normal().string();
    view.downscale = options.downscale;  // images_N (an --images folder with --downscale is refused)
    view.camera.c2w = camera_to_world(*image, where);
    view.distorted_camera.c2w = view.camera.c2w;
    view.camera.validate(where);
    scene.views.push_back(std::move(view));
  }
  scene.notes = model_notes(model, cameras, scene, images);
  return scene;
}

}  // namespace lact
