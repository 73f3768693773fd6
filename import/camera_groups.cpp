#include "import/camera_groups.h"

#include "system/terminal_text.h"

namespace lact {

std::vector<CameraGroup> camera_groups(const std::vector<ImportedImage>& images) {
  std::vector<CameraGroup> groups;
  for (const ImportedImage& image : images) {
    CameraGroup* group = nullptr;
    for (CameraGroup& g : groups)
      if (g.camera == image.camera && g.width == image.colmap_width && g.height == image.colmap_height) group = &g;
    if (!group) {
      groups.push_back({image.camera, image.colmap_width, image.colmap_height, {}});
      group = &groups.back();
    }
    group->names.push_back(image.name);
  }
  return groups;
}

std::string camera_groups_text(const std::vector<CameraGroup>& groups) {
  if (groups.size() <= 1) return "";
  if (groups.size() > kMaxCameraGroups)
    return std::to_string(groups.size()) + " cameras (EXIF) and image sizes, more than " +
           std::to_string(kMaxCameraGroups) + ": a camera for each image";
  constexpr size_t kShown = 6;
  std::string text = std::to_string(groups.size()) + " cameras, one per camera (EXIF) and image size: ";
  for (size_t i = 0; i < std::min(kShown, groups.size()); ++i) {
    const CameraGroup& g = groups[i];
    text += (i ? ", " : "") + (g.camera.empty() ? "" : terminal_text(g.camera) + " ") + std::to_string(g.width) + "x" +
            std::to_string(g.height) + " (" + std::to_string(g.names.size()) + " image" +
            (g.names.size() == 1 ? "" : "s") + ")";
  }
  if (groups.size() > kShown) text += " and " + std::to_string(groups.size() - kShown) + " more";
  return text;
}

}  // namespace lact
