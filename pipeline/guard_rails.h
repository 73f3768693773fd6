// Guard rails (issue 36): a run outside what its model was trained for is said, not refused. Each check gives one
// warning line or none: the working size's pixel count far from the training size's, cameras of the other kind
// (scene-like for an object model, object-like for a scene model), camera distances far from the training ones,
// and after the render a model scoring below copying the nearest input. The Run prints them before the work and
// records them in report.json; --warnings error makes them refusals. The thresholds are in docs/guide/evaluation.md.
#pragma once

#include <string>
#include <vector>

#include "core/camera.h"
#include "core/weights.h"
#include "pipeline/report.h"
#include "pipeline/scene_selection.h"

namespace lact {

// --warnings: off (no checks), on (printed and recorded), error (the first one ends the run with its line).
enum class WarningMode { Off, On, Error };
WarningMode parse_warning_mode(const std::string& text);

// The thresholds.
constexpr double kPixelRatioLimit = 2.0;    // working pixels more than 2x (or under 1/2) the training size's
constexpr double kObjectOffAxis = 10.0;     // object-like: the median camera looks within 10 deg of a common point
constexpr double kObjectViewSpread = 30.0;  // ... and their viewing directions span at least 30 deg
constexpr double kSceneOffAxis = 45.0;      // scene-like: the median camera looks more than 45 deg away from it
constexpr double kObjectDistance = 2.7;     // object models: cameras this far from the object at the origin
constexpr double kSceneExtent = 1.0;        // scene models: camera centres in [-1, 1] (normalised poses)
constexpr double kDistanceFactor = 2.0;     // distances more than 2x from those (either way) are far outside
constexpr double kWidestView = 150.0;       // a field of view wider than this (degrees) is no pinhole camera's
constexpr double kPrincipalMiddle = 0.375;  // principal points further than this (of a side) from the centre
constexpr double kSamePoint = 1e-4;         // centres closer than this (of their distance from the origin): one

// How cameras are laid out: around one point (an object) or not (a scene).
struct CameraLayout {
  double median_off_axis = 0;  // degrees between a camera's axis and the way to the point nearest all axes
  double least_off_axis = 0;   // ... the smallest of those angles
  double view_spread = 0;      // the largest angle between two cameras' viewing directions, degrees
  bool object_like() const { return median_off_axis <= kObjectOffAxis && view_spread >= kObjectViewSpread; }
  // Every camera looks straight away from one point: an object's cameras with the z axis reversed (OpenGL or
  // Blender poses read as OpenCV ones), or a ring of cameras facing outwards. Every one, not the median: a
  // forward-facing capture's axes meet behind it too, most of its cameras looking nearly away from that point
  // (the desk's numbers: docs/guide/evaluation.md).
  bool reversed_object_like() const {
    return median_off_axis >= 180 - kObjectOffAxis && least_off_axis >= 180 - 2 * kObjectOffAxis &&
           view_spread >= kObjectViewSpread;
  }
  bool scene_like() const { return median_off_axis > kSceneOffAxis; }
};
CameraLayout camera_layout(const std::vector<Camera>& cameras);

// Each check: the warning's text, or empty when there is nothing to say (or the model does not say what it was
// trained with).
// `remedy` says how to size it otherwise (the flag that sets it).
std::string size_warning(const ModelWeights& model, int height, int width, const std::string& remedy);
std::string camera_kind_warning(const std::string& kind, const std::vector<Camera>& cameras);
// Mistakes in what a file states, whatever the model: intrinsics no camera has (`indices` numbers the cameras in the
// message), and cameras that all sit at one point though they look different ways.
std::string intrinsics_warning(const std::vector<Camera>& cameras, const std::vector<int>& indices);
// How far the principal point is from the image centre, as a fraction of a side (the larger of x and y): over
// kPrincipalMiddle is warned of.
double principal_point_off_centre(const Camera& camera);
std::string coincident_cameras_warning(const std::vector<Camera>& cameras);
std::string camera_distance_warning(const std::string& kind, const std::vector<Camera>& cameras, bool normalized);
std::string baseline_warning(const SceneReport& scene);

// The checks before the work on a selection: its working size, and its input cameras as the model sees them
// (pose transform applied). Each text names the scene.
std::vector<std::string> selection_warnings(const ModelWeights& model, const SceneSelection& selection);

}  // namespace lact
