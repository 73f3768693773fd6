// Camera path files (`lact path` writes them, `lact render --path` and the viewer read them):
//   {"format": "lact camera path v1",
//    "frames": [{"c2w": [[...4x4, OpenCV camera-to-world...]], "fx": .., "fy": .., "cx": .., "cy": ..,
//                "w": .., "h": ..}, ...],
//    "made_by": "orbit",
//    "frame": {"normalize_poses": "none"} | {"normalize_poses": "inputs", "pose_world": [16], "pose_scale": s}}
// Intrinsics are pixels at w x h. "frame" is the world the cameras are in: the data's own (raw, "none") or the
// pose normalisation a state was encoded with (render refuses a path of another frame); older files have none.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/camera.h"
#include "datasets/pose_normalization.h"

namespace lact {

struct PathFrame {
  bool recorded = false;                 // false: a file from before frames were recorded (read as raw)
  std::string normalize_poses = "none";  // none (raw) | inputs | all: how the state's transform was chosen
  PoseTransform pose;                    // identity when raw
  std::string made_by;                   // the `lact path` kind, when recorded
  bool raw() const { return normalize_poses == "none"; }
  // The same world: both raw, or both normalised by the same transform (to rounding).
  bool same_world(const PathFrame& other) const;
};

nlohmann::json camera_to_json(const Camera& camera);
// One frame of a path ({c2w, fx, fy, cx, cy, w, h}) checked as read_camera_path checks it (`lact serve` reads
// them from its clients); Error(where, ...) naming the field.
Camera camera_from_json(const nlohmann::json& frame, const std::string& where);
// Every frame checked as render checks a camera: Error("<where> frame <i>", ...) for the first it would refuse.
// write_camera_path runs it before writing; lact.camera_path before returning.
void validate_path_frames(const std::vector<Camera>& frames, const std::string& where);
// With `frame`, the file records it (and made_by); without, no frame (the viewer's recordings).
void write_camera_path(const std::string& path, const std::vector<Camera>& frames, const PathFrame* frame = nullptr);
// Errors name the file and the frame.
std::vector<Camera> read_camera_path(const std::string& path);
// The frame the file records (recorded = false when none); Error naming the file when it is malformed.
PathFrame read_camera_path_frame(const std::string& path);
// True when `path` is a camera path as write_camera_path writes it: a regular file (not through a link) holding
// one object of its keys only ("format", "frames", "made_by", "frame"), "format" exactly the format line lact
// writes and "frames" an array. Whether a file at a name lact writes is lact's own (pipeline/output_ownership.h).
bool is_lact_camera_path(const std::string& path);

}  // namespace lact
