// The `transforms.json` family: nerfstudio / DL3DV (fl_x, fl_y, cx, cy, w, h, k1, k2, k3, p1, p2, or k1..k4 of an
// OPENCV_FISHEYE; per-frame overrides, applied_transform), instant-ngp (the same keys plus camera_angle_x) and
// NeRF-synthetic (camera_angle_x only, extensionless file_path). Poses are OpenGL camera-to-world (x right, y up,
// z back); we convert to OpenCV by flipping the camera's y and z axes: c2w_cv = c2w_gl * diag(1, -1, -1, 1).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "datasets/image_io.h"
#include "datasets/json_util.h"
#include "datasets/layouts.h"
#include "datasets/missing_image.h"
#include "system/error.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();  // a value the file does not state

// Intrinsics given at the top level and overridable per frame (NaN: not stated; json_number refuses NaN).
struct Intrinsics {
  double fl_x = kUnset, fl_y = kUnset, cx = kUnset, cy = kUnset, angle_x = kUnset, angle_y = kUnset;
  int w = 0, h = 0;
  LensDistortion distortion;
};

// nerfstudio's camera_model names whose lens lact models: pinhole plus OpenCV's k1 k2 k3 p1 p2, and OpenCV's
// fisheye with k1..k4 (what the reader undistorts). Equirectangular and the rest are refused by name, as the COLMAP
// reader does. Sets `fisheye` when the object names a model.
void read_camera_model(const nlohmann::json& j, bool& fisheye, const std::string& where) {
  if (!j.contains("camera_model")) return;
  const std::string model = json_string(j, "camera_model", where);
  for (const char* known : {"OPENCV", "PINHOLE", "SIMPLE_PINHOLE", "SIMPLE_RADIAL", "RADIAL", "OPENCV_FISHEYE"})
    if (model == known) {
      fisheye = model == "OPENCV_FISHEYE";
      return;
    }
  throw Error(where, "camera_model '" + model.substr(0, 40) +
                         "' is not one lact reads (it reads OPENCV, PINHOLE, SIMPLE_PINHOLE, SIMPLE_RADIAL, RADIAL: "
                         "pinhole with k1 k2 k3 p1 p2; OPENCV_FISHEYE with k1..k4): undistort the images first");
}

Intrinsics read_intrinsics(const nlohmann::json& j, Intrinsics base, const std::string& where) {
  read_camera_model(j, base.distortion.fisheye, where);
  auto number = [&](const char* key, double& out) {
    if (j.contains(key)) out = json_number(j, key, where);
  };
  number("fl_x", base.fl_x);
  number("fl_y", base.fl_y);
  number("cx", base.cx);
  number("cy", base.cy);
  number("camera_angle_x", base.angle_x);
  number("camera_angle_y", base.angle_y);
  number("k1", base.distortion.k1);
  number("k2", base.distortion.k2);
  number("k3", base.distortion.k3);
  number("k4", base.distortion.k4);
  number("p1", base.distortion.p1);
  number("p2", base.distortion.p2);
  if (j.contains("w")) base.w = json_int(j, "w", where, 1, kMaxImageSide);
  if (j.contains("h")) base.h = json_int(j, "h", where, 1, kMaxImageSide);
  if (!base.distortion.fisheye && base.distortion.k4 != 0)
    throw Error(where, "distortion 'k4' is a fisheye coefficient, but the camera_model is not OPENCV_FISHEYE");
  return base;
}

// Pixel focal lengths: fl_x (fl_y defaults to it), else the horizontal field of view (camera_angle_y, or square
// pixels). Checked against the camera bounds in double before they become floats.
void set_camera_intrinsics(Camera& cam, const Intrinsics& k, const std::string& where) {
  double fx, fy;
  if (!std::isnan(k.fl_x)) {
    fx = k.fl_x, fy = std::isnan(k.fl_y) ? k.fl_x : k.fl_y;
  } else if (!std::isnan(k.angle_x)) {
    if (!(k.angle_x > 0 && k.angle_x < 3.14159265358979))
      throw Error(where, "camera_angle_x must be in (0, pi) radians");
    fx = 0.5 * k.w / std::tan(0.5 * k.angle_x);
    fy = std::isnan(k.angle_y) ? fx : 0.5 * k.h / std::tan(0.5 * k.angle_y);
  } else {
    throw Error(where, "no focal length: needs 'fl_x' or 'camera_angle_x'");
  }
  set_intrinsics(cam, fx, fy, std::isnan(k.cx) ? 0.5 * k.w : k.cx, std::isnan(k.cy) ? 0.5 * k.h : k.cy, where);
}

// `images/frame_00001.png` -> `images_4/frame_00001.png` when reading a downscaled copy.
std::string downscaled(const std::string& file, int downscale) {
  if (downscale <= 1) return file;
  const size_t start = file.rfind("./", 0) == 0 ? 2 : 0;
  if (file.compare(start, 7, "images/") != 0) return file;
  return file.substr(0, start) + "images_" + std::to_string(downscale) + file.substr(start + 6);
}

bool same_intrinsics(const Camera& a, const Camera& b) {
  return a.width == b.width && a.height == b.height && a.fx == b.fx && a.fy == b.fy && a.cx == b.cx && a.cy == b.cy;
}

// What one frame shares with the others: the file's intrinsics, its world change and how images are found.
struct FrameContext {
  fs::path folder;
  Intrinsics top;
  std::array<double, 16> world;
  ReadOptions options;
};

// An image named as the file names it: NeRF-synthetic omits the ".png".
fs::path image_file(const fs::path& folder, const std::string& name) {
  fs::path path = folder / name;
  std::error_code ec;  // (a name too long for the file system is simply "not there")
  if (!fs::path(name).has_extension() || (!fs::exists(path, ec) && fs::exists(path.string() + ".png", ec)))
    path += ".png";
  return path.lexically_normal();
}

// With no 'w'/'h' stated, the intrinsics are for the image file_path names: its header's size. Where a downscaled
// copy images_N is read instead, that is the full-size image's, or (only the copy shipped) the copy's size times N,
// as nerfstudio scales such intrinsics by 1/N; the copy's own size would leave them N times too large.
void read_stated_size(Intrinsics& k, const fs::path& full_size, const std::string& read, int downscale,
                      const std::string& where) {
  std::error_code ec;
  if (read != full_size.string() && fs::exists(full_size, ec) && read_image_size(full_size.string(), k.w, k.h)) return;
  if (!read_image_size(read, k.w, k.h))
    throw Error(where, "no 'w'/'h' and the image " + read + " cannot be read for its size" + missing_image_hint(read));
  if (read != full_size.string()) k.w *= downscale, k.h *= downscale;
}

SceneView read_frame(const nlohmann::json& f, const FrameContext& context, const SceneView* last,
                     const std::string& where) {
  if (!f.is_object()) throw Error(where, "frame is not an object");
  SceneView view;
  const std::string stated = json_string(f, "file_path", where);
  const std::string image = downscaled(stated, context.options.downscale);
  view.image_path = image_file(context.folder, image).string();

  Intrinsics k = read_intrinsics(f, context.top, where);
  if (k.w <= 0 || k.h <= 0)
    read_stated_size(k, image_file(context.folder, stated), view.image_path, context.options.downscale, where);
  Camera& cam = view.camera;
  cam.width = k.w, cam.height = k.h;
  if (image != stated) view.downscale = context.options.downscale;  // images_N
  set_camera_intrinsics(cam, k, where);

  const auto transform = json_matrix4(f, "transform_matrix", where);
  check_rigid_pose(transform, where, "field 'transform_matrix'");
  const auto gl = multiply4(context.world, transform);
  for (int r = 0; r < 4; ++r) {
    cam.c2w[r * 4 + 0] = gl[r * 4 + 0];
    cam.c2w[r * 4 + 1] = -gl[r * 4 + 1];
    cam.c2w[r * 4 + 2] = -gl[r * 4 + 2];
    cam.c2w[r * 4 + 3] = gl[r * 4 + 3];
  }
  cam.validate(where);
  if (k.distortion.any()) {
    view.distortion = k.distortion;
    view.distorted_camera = cam;
    // Frames usually share one camera: reuse the previous frame's undistorted intrinsics when equal.
    if (last && last->distortion == k.distortion && same_intrinsics(last->distorted_camera, cam)) {
      const Camera& p = last->camera;
      cam.fx = p.fx, cam.fy = p.fy, cam.cx = p.cx, cam.cy = p.cy;
      view.camera = cam;
    } else {
      view.camera = undistorted_camera(cam, k.distortion, where);
    }
  }
  return view;
}

// The order views are numbered in: nerfstudio's sorts its frames by file_path (ns-process-data names them
// frame_00001 ...; lact's COLMAP reader sorts by name too), so --inputs and fold8 pick the views nerfstudio's splits
// do; NeRF-synthetic's (r_0, r_1, ..., r_10: its order is not its names') keeps the file's order.
std::vector<size_t> frame_order(const nlohmann::json& frames, bool by_file_path) {
  std::vector<size_t> order(frames.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto name = [&](size_t i) -> std::string {
    const nlohmann::json& f = frames[i];
    return f.is_object() && f.contains("file_path") && f.at("file_path").is_string()
               ? f.at("file_path").get<std::string>()
               : "";
  };
  if (by_file_path) std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return name(a) < name(b); });
  return order;
}

}  // namespace

Scene read_transforms_file(const fs::path& path, const nlohmann::json& json, const std::string& split,
                           const ReadOptions& options) {
  const std::string file = path.string();
  if (!json.is_object() || !json.contains("frames") || !json.at("frames").is_array())
    throw Error(file, "expected an object with 'frames'");
  Scene scene;
  scene.source = file;
  scene.name = fs::absolute(path).lexically_normal().parent_path().filename().string();
  FrameContext context{path.parent_path(),
                       read_intrinsics(json, Intrinsics{}, file),
                       {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1},
                       options};
  const nlohmann::json& frames = json.at("frames");
  // NeRF-synthetic states only camera_angle_x; nerfstudio states pixel intrinsics, at the top or (several cameras)
  // in each frame.
  const bool pixel_intrinsics = !std::isnan(context.top.fl_x) || context.top.w > 0 ||
                                (!frames.empty() && frames[0].is_object() && frames[0].contains("fl_x"));
  scene.layout = pixel_intrinsics ? "nerfstudio" : "nerf-synthetic";

  // nerfstudio records the world change it applied to the COLMAP poses; undo it (as the official DL3DV
  // converter does) so poses are in the reconstruction's own world.
  if (json.contains("applied_transform")) {
    const auto applied = json_matrix4(json, "applied_transform", file);
    check_rigid_pose(applied, file, "field 'applied_transform'");
    if (!invert4(applied, context.world)) throw Error(file, "field 'applied_transform' is not invertible");
  }

  const std::vector<size_t> order = frame_order(frames, scene.layout == "nerfstudio");
  if (!std::is_sorted(order.begin(), order.end()))
    scene.notes.push_back("views in file_path order, as nerfstudio takes them (the file lists them otherwise)");
  for (size_t i : order) {
    const SceneView* last = scene.views.empty() ? nullptr : &scene.views.back();
    SceneView view = read_frame(frames[i], context, last, file + " frame " + std::to_string(i));
    view.split = split;
    scene.views.push_back(std::move(view));
  }
  if (scene.views.empty()) throw Error(file, "the scene has no frames");
  return scene;
}

}  // namespace lact
