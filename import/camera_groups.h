// The cameras COLMAP is told the images share: one per camera the EXIF names (Make and Model) and image size
// COLMAP sees, so that the photos of one camera at one size share one focal length (per-image cameras let each
// photo's focal length drift on its own). Images without EXIF are grouped by size alone. Each group is one run of
// COLMAP's feature_extractor with --ImageReader.single_camera 1 over its list of images; past
// kMaxCameraGroups groups, one run with a camera per image.
#pragma once

#include <string>
#include <vector>

#include "import/import_images.h"

namespace lact {

constexpr size_t kMaxCameraGroups = 16;

struct CameraGroup {
  std::string camera;         // EXIF "Make Model", or ""
  int width = 0, height = 0;  // as COLMAP sees the images
  std::vector<std::string> names;
};

// The groups in order of their first image by name.
std::vector<CameraGroup> camera_groups(const std::vector<ImportedImage>& images);

// The summary's line when the images are not one group: "2 cameras, one per camera (EXIF) and image size:
// 480x270 (12 images), Pixel 7 240x135 (4 images)", or that each image got one past kMaxCameraGroups; "" for one.
std::string camera_groups_text(const std::vector<CameraGroup>& groups);

}  // namespace lact
