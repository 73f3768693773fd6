#include "pipeline/official_models.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lact {

namespace {

// The parameter counts of the two official configs (the reference model built from each, tools/reference),
// times 4 bytes: the authors' files hold the fp32 state dict of that model.
constexpr uint64_t kTtt2xBytes = 312298056ull * 4;
constexpr uint64_t kTtt4xBytes = 397232712ull * 4;
constexpr int kCpuPixels = 256 * 256;

OfficialModel entry(const char* name, const char* kind, int height, int width, const char* config, int views,
                    uint64_t bytes) {
  return OfficialModel{name, kind, height, width, config, views, bytes};
}

}  // namespace

std::string official_model_url(const std::string& hub, const std::string& name) {
  std::string base = hub;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + kOfficialRepository + "/resolve/main/" + name + ".pt";
}

// From the official lact_nvs/README.md ("Download Pre-trained checkpoints"): the object models run with the
// default config (ttt2x; their input view count is not stated), the scene models with ttt2x ("trained with 32
// inputs") or ttt4x ("trained longer and trained with 64 inputs"); the file names give the size as HxW.
const std::vector<OfficialModel>& official_models() {
  static const std::vector<OfficialModel> models = {
      entry("obj_res256", "object", 256, 256, "lact_l24_d768_ttt2x", 0, kTtt2xBytes),
      entry("obj_res512", "object", 512, 512, "lact_l24_d768_ttt2x", 0, kTtt2xBytes),
      entry("obj_res1024", "object", 1024, 1024, "lact_l24_d768_ttt2x", 0, kTtt2xBytes),
      entry("scene_res128x128", "scene", 128, 128, "lact_l24_d768_ttt2x", 32, kTtt2xBytes),
      entry("scene_res256x256", "scene", 256, 256, "lact_l24_d768_ttt2x", 32, kTtt2xBytes),
      entry("scene_res512x512", "scene", 512, 512, "lact_l24_d768_ttt2x", 32, kTtt2xBytes),
      entry("scene_res72x128", "scene", 72, 128, "lact_l24_d768_ttt4x", 64, kTtt4xBytes),
      entry("scene_res144x256", "scene", 144, 256, "lact_l24_d768_ttt4x", 64, kTtt4xBytes),
      entry("scene_res288x512", "scene", 288, 512, "lact_l24_d768_ttt4x", 64, kTtt4xBytes),
      entry("scene_res536x960", "scene", 536, 960, "lact_l24_d768_ttt4x", 64, kTtt4xBytes),
  };
  return models;
}

const OfficialModel* find_official_model(const std::string& name) {
  const std::string bare =
      name.size() > 3 && name.compare(name.size() - 3, 3, ".pt") == 0 ? name.substr(0, name.size() - 3) : name;
  for (const OfficialModel& m : official_models())
    if (m.name == bare) return &m;
  return nullptr;
}

namespace {

double log_aspect(int width, int height) { return std::log(static_cast<double>(width) / height); }

}  // namespace

const OfficialModel& scene_model_for(int width, int height) {
  const double aspect = width > 0 && height > 0 ? log_aspect(width, height) : 0;
  // The family: the aspect of its sizes nearest the images' (in log terms, so 2:1 and 1:2 are as far from 1:1).
  double nearest = 1e9;
  for (const OfficialModel& m : official_models())
    if (m.kind == "scene") nearest = std::min(nearest, std::abs(log_aspect(m.width, m.height) - aspect));
  const OfficialModel *largest_covered = nullptr, *smallest = nullptr;
  for (const OfficialModel& m : official_models()) {
    if (m.kind != "scene" || std::abs(log_aspect(m.width, m.height) - aspect) > nearest + 1e-9) continue;
    const int pixels = m.height * m.width;
    if (!smallest || pixels < smallest->height * smallest->width) smallest = &m;
    const bool covered = m.height <= height && m.width <= width && pixels <= kCpuPixels;
    if (covered && (!largest_covered || pixels > largest_covered->height * largest_covered->width))
      largest_covered = &m;
  }
  return largest_covered ? *largest_covered : *smallest;
}

std::string size_text(uint64_t bytes) {
  char text[32];
  if (bytes >= 1000000000ull)
    std::snprintf(text, sizeof text, "%.2f GB", bytes / 1e9);
  else
    std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
  return text;
}

}  // namespace lact
