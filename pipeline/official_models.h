// The official LaCT NVS checkpoints (the Hugging Face repository airsplay/lact_nvs), in one table: what each was
// trained on, at which size, with which config and how many input views, and about how large its download is.
// `lact model list` prints it, `lact model fetch` downloads from it, and `lact import` picks the scene model
// that fits a capture from it. tools/checkpoint_names.py holds the same facts for the converter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lact {

struct OfficialModel {
  std::string name;           // the file's name without ".pt": obj_res256, scene_res144x256, ...
  std::string kind;           // "object" (Objaverse) or "scene" (DL3DV)
  int height = 0, width = 0;  // the training size
  std::string config;         // the official config it needs (a built-in name of the converter)
  int input_views = 0;        // the input views it was trained with (0: not stated by the authors)
  uint64_t approx_bytes = 0;  // its fp32 tensors (the parameter count of its config x 4): the hub's size rules
};

// The hub, the repository and the path of a file in it, as huggingface.co serves them.
constexpr const char* kDefaultHub = "https://huggingface.co";
constexpr const char* kOfficialRepository = "airsplay/lact_nvs";
std::string official_model_url(const std::string& hub, const std::string& name);

const std::vector<OfficialModel>& official_models();
// The entry of that name (with or without ".pt"), or nullptr.
const OfficialModel* find_official_model(const std::string& name);

// The scene model that fits a capture whose images are width x height: the family whose aspect is nearest
// (the square ones trained with 32 inputs, the 9:16 ones with 64), then the largest training size the images
// cover, at most 256x256's pixel count (a CPU renders it in minutes; larger ones are listed by `lact model list`).
const OfficialModel& scene_model_for(int width, int height);

// "1.25 GB"
std::string size_text(uint64_t bytes);

}  // namespace lact
