#include "pipeline/guard_rails.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/camera_geometry.h"
#include "system/error.h"

namespace lact {

namespace {

constexpr double kDegrees = 180.0 / 3.14159265358979323846;

template <typename... Args>
std::string format(const char* pattern, Args... args) {
  char text[1024];
  std::snprintf(text, sizeof text, pattern, args...);
  return text;
}

Vec3 centre_of(const Camera& c) { return {c.c2w[3], c.c2w[7], c.c2w[11]}; }
Vec3 axis_of(const Camera& c) { return {c.c2w[2], c.c2w[6], c.c2w[10]}; }  // OpenCV: the camera looks along +z

double angle_between(const Vec3& a, const Vec3& b) {
  const double lengths = norm(a) * norm(b);
  if (lengths <= 0) return 0;
  return std::acos(std::clamp(dot(a, b) / lengths, -1.0, 1.0)) * kDegrees;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

WarningMode parse_warning_mode(const std::string& text) {
  if (text == "off") return WarningMode::Off;
  if (text == "on") return WarningMode::On;
  if (text == "error") return WarningMode::Error;
  throw Error("--warnings", "'" + text.substr(0, 40) + "' is not off, on or error");
}

CameraLayout camera_layout(const std::vector<Camera>& cameras) {
  CameraLayout layout;
  if (cameras.size() < 2) return layout;  // one camera looks at anything
  const Vec3 point = look_at_point(cameras);
  std::vector<double> off_axis;
  for (const Camera& c : cameras) {
    off_axis.push_back(angle_between(axis_of(c), sub(point, centre_of(c))));
    for (const Camera& other : cameras)
      layout.view_spread = std::max(layout.view_spread, angle_between(axis_of(c), axis_of(other)));
  }
  layout.median_off_axis = median(off_axis);
  layout.least_off_axis = *std::min_element(off_axis.begin(), off_axis.end());
  return layout;
}

std::string size_warning(const ModelWeights& model, int height, int width, const std::string& remedy) {
  if (model.trained_height <= 0 || model.trained_width <= 0 || height <= 0 || width <= 0) return "";
  const double ratio =
      static_cast<double>(height) * width / (static_cast<double>(model.trained_height) * model.trained_width);
  if (ratio <= kPixelRatioLimit && ratio >= 1 / kPixelRatioLimit) return "";
  return format(
      "working size %dx%d has %.3gx the pixels of the model's training size %dx%d (more than %gx either way): "
      "expect the patch grid to show; %s",
      height, width, ratio, model.trained_height, model.trained_width, kPixelRatioLimit, remedy.c_str());
}

std::string camera_kind_warning(const std::string& kind, const std::vector<Camera>& cameras) {
  const CameraLayout layout = camera_layout(cameras);
  if (kind == "object" && layout.reversed_object_like())
    return format(
        "the input cameras each look straight away from one point (the median one looks %.1f deg away): OpenGL or "
        "Blender poses (y up, z back) given as OpenCV ones (y down, z forward)? If so, negate the second and third "
        "columns of each camera-to-world rotation; cameras that do face outwards are a scene's, and the model was "
        "trained on objects",
        layout.median_off_axis);
  if (kind == "object" && layout.scene_like())
    return format(
        "the input cameras do not look at a common centre (the median one looks %.0f deg away from the point "
        "nearest their axes), as a scene's do, but the model was trained on objects: use a scene model (an official "
        "scene_res*.pt; README.md, Official checkpoints)",
        layout.median_off_axis);
  if (kind == "scene" && layout.object_like())
    return format(
        "the input cameras all look at one point (the median one within %.1f deg of it), as around an object, but "
        "the model was trained on scenes: use an object model (an official obj_res*.pt; README.md, Official "
        "checkpoints)",
        layout.median_off_axis);
  return "";
}

double principal_point_off_centre(const Camera& c) {
  return std::max(std::abs(c.cx / c.width - 0.5), std::abs(c.cy / c.height - 0.5));
}

std::string intrinsics_warning(const std::vector<Camera>& cameras, const std::vector<int>& indices) {
  for (size_t i = 0; i < cameras.size(); ++i) {
    const Camera& c = cameras[i];
    const double wide = 2 * std::atan(0.5 * std::max(c.width / c.fx, c.height / c.fy)) * kDegrees;
    const double off = principal_point_off_centre(c);
    const int view = i < indices.size() ? indices[i] : static_cast<int>(i);
    if (wide > kWidestView)
      return format(
          "view %d states fx %.4g, fy %.4g pixels for a %dx%d image, a %.0f deg field of view (no pinhole camera "
          "sees over %.0f): focal lengths in normalised units? lact reads pixels: multiply fx by the width, fy by the "
          "height",
          view, c.fx, c.fy, c.height, c.width, wide, kWidestView);
    if (off > kPrincipalMiddle)
      return format(
          "view %d states its principal point at (cx, cy) = (%.4g, %.4g) for a %dx%d image, %.0f%% of a side from "
          "its centre: measured from the centre, or in normalised units? lact reads pixels from the image's top-left "
          "corner (a camera's is near the centre: %.4g, %.4g)",
          view, c.cx, c.cy, c.height, c.width, 100 * off, 0.5 * c.width, 0.5 * c.height);
  }
  return "";
}

std::string coincident_cameras_warning(const std::vector<Camera>& cameras) {
  if (cameras.size() < 2) return "";
  Vec3 centroid{0, 0, 0};
  for (const Camera& c : cameras) centroid = add(centroid, mul(centre_of(c), 1.0 / cameras.size()));
  double spread = 0, turn = 0;
  for (const Camera& c : cameras) {
    spread = std::max(spread, norm(sub(centre_of(c), centroid)));
    turn = std::max(turn, angle_between(axis_of(c), axis_of(cameras[0])));
  }
  if (spread > kSamePoint * std::max(norm(centroid), 1e-6) || turn < 1) return "";
  for (double& x : centroid) x = std::abs(x) < kSamePoint * norm(centroid) ? 0 : x;  // float noise shown as 0
  return format(
      "the %zu cameras all sit at one point (%.4g, %.4g, %.4g) though they look up to %.0f deg apart: "
      "world-to-camera matrices given as camera-to-world, or the reverse? (opencv_cameras.json's w2c is "
      "world-to-camera, transforms.json's transform_matrix camera-to-world; an orbit's w2c translations are all "
      "(0, 0, radius)); a capture turning on one spot has no parallax to render from",
      cameras.size(), centroid[0], centroid[1], centroid[2], turn);
}

std::string camera_distance_warning(const std::string& kind, const std::vector<Camera>& cameras, bool normalized) {
  if (cameras.empty()) return "";
  if (kind == "object") {
    double nearest = norm(centre_of(cameras[0])), farthest = nearest;
    for (const Camera& c : cameras)
      nearest = std::min(nearest, norm(centre_of(c))), farthest = std::max(farthest, norm(centre_of(c)));
    const double low = kObjectDistance / kDistanceFactor, high = kObjectDistance * kDistanceFactor;
    if (nearest >= low && farthest <= high) return "";
    return format(
        "the input cameras are %.3g..%.3g units from the origin; the object model was trained with cameras about %g "
        "from the object at the origin (%.3g..%.3g accepted)%s",
        nearest, farthest, kObjectDistance, low, high,
        normalized ? ": --normalize-poses scales them into [-1, 1], which is for scene models" : "");
  }
  if (kind != "scene") return "";
  double extent = 0;
  for (const Camera& c : cameras)
    for (double x : centre_of(c)) extent = std::max(extent, std::abs(x));
  if (extent >= kSceneExtent / kDistanceFactor && extent <= kSceneExtent * kDistanceFactor) return "";
  return format(
      "the input camera centres reach %.3g units along an axis; the scene model was trained with poses normalised "
      "into [-1, 1] (%.3g..%.3g accepted)%s",
      extent, kSceneExtent / kDistanceFactor, kSceneExtent * kDistanceFactor,
      normalized ? "" : ": add --normalize-poses inputs");
}

std::string baseline_warning(const SceneReport& scene) {
  bool baseline = false;
  for (const ViewReport& v : scene.views) baseline = baseline || v.nearest_input >= 0;
  if (!baseline || scene.psnr() >= scene.psnr_nearest_input()) return "";
  return scene.name + format(": the model scores below copying the nearest input: %.2f vs %.2f dB", scene.psnr(),
                             scene.psnr_nearest_input());
}

std::vector<std::string> selection_warnings(const ModelWeights& model, const SceneSelection& selection) {
  std::vector<std::string> found{size_warning(model, selection.height, selection.width,
                                              "without --size the working size keeps the training pixel count")};
  if (!selection.inputs.empty()) {
    std::vector<Camera> cameras, stated;
    for (const PosedImage& v : selected_views(selection, selection.inputs, false)) cameras.push_back(v.camera);
    for (int i : selection.inputs) stated.push_back(selection.scene.views[i].camera);
    found.push_back(intrinsics_warning(stated, selection.inputs));
    const std::string coincident = coincident_cameras_warning(cameras);
    found.push_back(coincident);
    if (!model.trained_kind.empty()) {
      if (coincident.empty()) found.push_back(camera_kind_warning(model.trained_kind, cameras));
      // Normalised by --normalize-poses, or by the transform a state was encoded with.
      const bool normalized = selection.normalization != PoseNormalization::None || selection.pose.scale != 1.0 ||
                              selection.pose.world != PoseTransform{}.world;
      found.push_back(camera_distance_warning(model.trained_kind, cameras, normalized));
    }
  }
  std::vector<std::string> warnings;
  for (const std::string& text : found)
    if (!text.empty()) warnings.push_back(selection.scene.name + ": " + text);
  return warnings;
}

}  // namespace lact
