// lact info: what a model, a scene state or a dataset holds.
#include <cstdio>

#include "app/commands.h"
#include "app/flags.h"
#include "app/unused_flags.h"
#include "core/module_kind.h"
#include "core/safetensors.h"
#include "core/scene_state_io.h"
#include "core/weights.h"
#include "datasets/missing_image.h"
#include "datasets/preprocess.h"
#include "datasets/scene_summary.h"
#include "datasets/view_selection.h"
#include "kernels/backend_factory.h"
#include "kernels/cpu/dnnl_gemm.h"
#include "kernels/cuda/attention_library.h"
#include "pipeline/backend_environment.h"
#include "pipeline/backend_options.h"
#include "pipeline/guard_rails.h"
#include "pipeline/scene_selection.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact::app {

namespace {

void print_config(const ModelConfig& c) {
  std::printf("config: patch %d, dim %d, layers %d\n", c.patch_size, c.dim, c.layers);
  for (size_t j = 0; j < c.block.size(); ++j)
    std::printf("  module %zu: %s\n", j, c.block[j].kind->describe(c, c.block[j]).c_str());
  const long long fixed = c.state_floats_per_layer(0), per_token = c.state_floats_per_layer(1) - fixed;
  if (fixed)
    std::printf("scene state (%s): %lld floats per layer, %lld in all (%.2f MiB per scene in fp32)\n",
                c.ttt_variant().key == "dot_product" ? "fast weights W0, W1, W2" : "fast weight W1", fixed,
                fixed * c.layers, fixed * c.layers * 4.0 / (1 << 20));
  if (per_token)
    std::printf("KV cache: %lld floats per input token (%.1f KiB per token in fp32), growing with the inputs\n",
                per_token * c.layers, per_token * c.layers * 4.0 / 1024);
}

// Parameters and tensors of a safetensors file.
std::pair<long long, size_t> count_floats(const SafetensorsFile& file) {
  long long count = 0;
  for (const auto& [name, entry] : file.entries()) {
    long long n = 1;
    for (int64_t d : entry.shape) n *= d;
    count += n;
  }
  return {count, file.entries().size()};
}

// A scene state: its config and what its metadata says about its origin (names and paths from data, escaped).
void info_state(const std::string& path, const SafetensorsFile& file) {
  std::string refused;  // its format and seal checked as render checks them: described, then refused as render does
  try {
    read_scene_state_metadata(path);
  } catch (const Error& e) {
    refused = e.what();
  }
  const auto& meta = file.metadata();
  std::printf("%s: scene state\n", terminal_text(path).c_str());
  print_config(config_from_metadata(file));
  for (const char* key : {"model", "data", "images", "scene", "inputs", "height", "width", "input_views", "background",
                          "normalize_poses"})
    if (meta.count(key)) std::printf("%s: %s\n", key, terminal_text(metadata_or(meta, key, "")).c_str());
  const auto [count, tensors] = count_floats(file);
  std::printf("state: %zu tensors, %lld floats (%.2f MiB in fp32), variant %s\n", tensors, count,
              count * 4.0 / (1 << 20), terminal_text(metadata_or(meta, "ttt_variant", "dot_product")).c_str());
  if (!refused.empty()) throw Error(refused + " (lact render refuses it)");
}

// What the model's metadata records about its training data; each part the model does not record says so.
void print_trained_on(const ModelWeights& w) {
  const std::string kind = w.trained_kind.empty() ? "kind not recorded" : w.trained_kind + "s";
  const std::string size = w.trained_height > 0
                               ? std::to_string(w.trained_height) + "x" + std::to_string(w.trained_width)
                               : "size not recorded";
  const std::string views =
      w.trained_input_views > 0 ? std::to_string(w.trained_input_views) + " input views" : "input views not recorded";
  std::printf("trained on: %s, %s, %s\n", kind.c_str(), size.c_str(), views.c_str());
}

// A model is read and checked exactly as render reads it (the same loader: config, tensor names and shapes,
// NaN and infinite weights), so info describes only models that render accepts.
std::unique_ptr<Model> info_model(const std::string& path, Backend& backend) {
  std::unique_ptr<Model> model = load_model_for(path, backend);
  const SafetensorsFile file(path);
  std::printf("%s: model\n", terminal_text(path).c_str());
  print_config(model->config());
  const auto [count, tensors] = count_floats(file);
  std::printf("parameters: %lld (%.1f M) in %zu tensors\n", count, count / 1e6, tensors);
  const ModelWeights& w = model->weights();
  if (w.trained_height > 0 || w.trained_input_views > 0 || !w.trained_kind.empty()) print_trained_on(w);
  return model;
}

// The model `path` holds, for --data's working size and inputs; none for a scene state.
std::unique_ptr<Model> info_file(const std::string& path, Backend& backend) {
  refuse_pytorch_checkpoint(path);
  const SafetensorsFile file(path);
  const std::string format = metadata_or(file.metadata(), "format", "");
  if (format.rfind("lact scene state", 0) != 0) return info_model(path, backend);
  info_state(path, file);
  return nullptr;
}

void print_range(const char* name, const Range& r) { std::printf("%s %.4g..%.4g", name, r.min, r.max); }

// What a file states that no capture has, said whatever the model: images not where the file says (the COLMAP
// layout counts them in its note), intrinsics no camera has, every camera at one point.
void print_stated_mistakes(const Scene& scene) {
  std::vector<std::string> paths;
  std::vector<Camera> cameras;
  for (const SceneView& v : scene.views) paths.push_back(v.image_path), cameras.push_back(v.camera);
  const MissingImages missing = find_missing_images(paths);
  if (missing.count && scene.layout != "colmap")
    std::printf("  images: %d of %zu missing, the first %s%s\n", missing.count, paths.size(),
                terminal_text(missing.first).c_str(), terminal_text(missing.hint).c_str());
  for (const std::string& warning : {intrinsics_warning(cameras, {}), coincident_cameras_warning(cameras)})
    if (!warning.empty()) std::printf("  warning: %s\n", terminal_text(warning).c_str());
}

// The working size and how the first input view becomes it; `hint`: the size is the views' own only for want of a
// model, so say where render's comes from.
void print_working_size(const SceneSelection& selection, bool hint) {
  const SceneView& first = selection.scene.views[selection.inputs.empty() ? 0 : selection.inputs[0]];
  const CoverCrop crop = cover_crop(first.camera, selection.height, selection.width);
  std::printf(
      "working size %dx%d (HxW, %s): view %dx%d resized to %dx%d (Catmull-Rom, scale %.4g), crop left %d top %d\n",
      selection.height, selection.width, selection.size_rule.c_str(), first.camera.height, first.camera.width,
      crop.resized_height, crop.resized_width, static_cast<double>(crop.resized_width) / first.camera.width, crop.left,
      crop.top);
  if (hint)
    std::printf(
        "  (lact render's size without --size: a state's own, or a model's training pixel count at this aspect: "
        "give --model to see it)\n");
}

// With `model`, the working size and inputs are the ones lact render would choose with it (its training pixel count
// and input count, its patch); without, the views' own size, which no model may take.
void info_data(DataOptions o, const std::string& targets_spec, const Model* model) {
  if (model) apply_model_defaults(o, *model, true);
  const SceneList list = read_scene_list(o.data, read_options(o));
  // Names, paths and notes come from the data: printed escaped (system/terminal_text.h).
  std::printf("%s: %zu scene(s)\n", terminal_text(o.data).c_str(), list.scenes.size());
  for (const auto& [entry, error] : list.failed)
    std::printf("failed to read %s: %s\n", terminal_text(entry).c_str(), terminal_text(error).c_str());
  if (list.scenes.empty()) throw Error(o.data, "no scene could be read");
  for (const Scene& scene : list.scenes) {
    if (!o.scene.empty() && scene.name != o.scene) continue;
    const SceneSummary s = summarize_scene(scene);
    std::printf("scene %s (%s layout, %s): %d views\n", terminal_text(scene.name).c_str(),
                terminal_text(scene.layout).c_str(), terminal_text(scene.source).c_str(), s.views);
    for (const std::string& note : scene.notes) std::printf("  %s\n", terminal_text(note).c_str());
    std::printf("  image sizes (HxW, as every size flag):");
    for (const auto& [w, h] : s.sizes) std::printf(" %dx%d", h, w);
    std::printf("\n  intrinsics (px): ");
    print_range("fx", s.fx), std::printf(", "), print_range("fy", s.fy), std::printf(", ");
    print_range("cx", s.cx), std::printf(", "), print_range("cy", s.cy);
    std::printf("\n  camera centres: ");
    print_range("x", s.centre[0]), std::printf(", "), print_range("y", s.centre[1]), std::printf(", ");
    print_range("z", s.centre[2]);
    std::printf(
        "\n  distance to their centroid (%.3g, %.3g, %.3g): %.4g..%.4g; to the origin: %.4g..%.4g; "
        "forward axes point at the origin: mean cosine %.3f\n",
        s.centroid[0], s.centroid[1], s.centroid[2], s.distance_to_centroid.min, s.distance_to_centroid.max,
        s.distance_to_origin.min, s.distance_to_origin.max, s.look_at_origin);
    if (s.distorted_views > s.fisheye_views)
      std::printf("  lens distortion (k1 k2 p1 p2) in %d views: undistorted to pinhole intrinsics on load\n",
                  s.distorted_views - s.fisheye_views);
    if (s.fisheye_views)
      std::printf("  fisheye lens (k1..k4) in %d views: undistorted to pinhole intrinsics on load\n", s.fisheye_views);
    for (const auto& [name, r] : s.splits)
      std::printf("  split %s: views %.0f-%.0f\n", terminal_text(name).c_str(), r.min, r.max);
    print_stated_mistakes(scene);
    if (!scene.kmeans_inputs.empty())
      std::printf("  %s: %zu input views\n", terminal_text(scene.kmeans_key).c_str(), scene.kmeans_inputs.size());
  }
  // The preprocessing this run's flags choose, for the chosen (or first) scene.
  const SceneSelection selection = plan_scene(
      select_scene(list.scenes, o.scene.empty() && list.scenes.size() > 1 ? list.scenes[0].name : o.scene, o.data), o,
      model ? model->config().patch_size : 1, targets_spec);  // without a model, any size: info only describes
  const Scene& scene = selection.scene;
  std::vector<int> targets;
  if (!targets_spec.empty()) targets = select_views(targets_spec, scene, true, selection.inputs, o.seed, "--targets");
  auto print_list = [](const char* name, const std::vector<int>& v) {
    std::printf("%s (%zu):", name, v.size());
    for (int i : v) std::printf(" %d", i);
    std::printf("\n");
  };
  if (!selection.inputs.empty()) print_list("inputs", selection.inputs);
  if (!targets.empty()) print_list("targets", targets);
  if (selection.height) print_working_size(selection, model == nullptr && o.size.first == 0);
  std::printf("background for RGBA: %.3g,%.3g,%.3g\n", selection.background[0], selection.background[1],
              selection.background[2]);
  if (selection.normalization == PoseNormalization::None) {
    std::printf("pose normalisation: none\n");
  } else {
    Range radius;
    bool first = true;
    for (const SceneView& v : scene.views) {
      const Camera c = apply_pose_transform(selection.pose, v.camera);
      const double d = std::sqrt(c.c2w[3] * c.c2w[3] + c.c2w[7] * c.c2w[7] + c.c2w[11] * c.c2w[11]);
      radius = first ? Range{d, d} : Range{std::min(radius.min, d), std::max(radius.max, d)};
      first = false;
    }
    std::printf("pose normalisation: mean pose of %s, translations / %.4g; camera distances after: %.4g..%.4g\n",
                pose_normalization_name(o.normalize_poses), selection.pose.scale, radius.min, radius.max);
  }
}

struct InfoOptions {
  std::string file, targets;
  DataOptions data;
  bool devices = false;
};

// Every backend this build has, whether it runs here, and on what. The backends are made here directly, not
// through pipeline's make_backend, so the environment's backend switches are checked here as every command checks
// them: a value the CUDA backend would refuse is one line and a non-zero exit on the CPU too, before any output.
void info_devices() {
  check_backend_environment();
  for (const std::string& name : backend_names()) {
    std::string why;
    if (!backend_available(name, &why)) {
      std::printf("%-5s unavailable: %s\n", name.c_str(), why.c_str());
      continue;
    }
    auto backend = lact::make_backend(name, 0);
    const int64_t memory = backend->available_memory();
    std::printf("%-5s %s; %.1f GiB available\n", name.c_str(), backend->device_description().c_str(),
                memory < 0 ? 0.0 : static_cast<double>(memory) / (1ll << 30));
    if (name == "cpu")  // what --precision bf16 would use here
      std::printf("      bf16 products: %s%s\n", cpu_bf16_capability().c_str(),
                  cpu_bf16_available() ? "" : " (--precision bf16 refused)");
    if (name == "cuda") {  // which code --precision bf16's attention would run (loads cuDNN to tell)
      const auto bf16 = lact::make_backend(name, 0, Precision::Bf16);
      std::printf("      bf16 attention: %s (LACT_ATTENTION=cudnn|own; unset: cudnn where it loads)\n",
                  cuda::attention_path(*bf16).c_str());
      std::printf("      bf16 activations: %s between products (LACT_BF16_ACTIVATIONS=0: float32)\n",
                  dtype_name(bf16->activation_type()));
      const bool wide_heads = cuda::attention_head_dim_problem(*bf16, 256).empty();  // cuDNN's largest
      std::printf(
          "      attention head dims: up to %d on every path; larger (multiples of 8 up to 256) only through "
          "cuDNN at --precision bf16%s\n",
          static_cast<int>(cuda::kMaxOwnAttentionHeadDim), wide_heads ? "" : " (not here: see bf16 attention)");
    }
  }
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* command = app.add_subcommand("info",
                                         "Describe a model, a scene state (FILE) or a dataset (--data): "
                                         "config and sizes, or cameras, views and preprocessing");
  // --model and --state as every other command names them; the positional FILE is the same option.
  command->add_option("file,--model,--state", o->file, "Model or scene state (.safetensors)")
      ->transform(model_file());  // an official name once cached, as for render
  add_data_options(*command, o->data);
  command->add_option("--targets", o->targets, "Target views to show (as for render)");
  command->add_flag("--devices", o->devices, "List the compute devices (cpu, cuda) and whether each runs here");
  command->callback([o, command]() {
    if (o->data.data.empty()) {
      std::vector<std::string> flags = data_detail_flags();
      flags.push_back("--targets");
      refuse_unused_flags(*command, flags, "describes a dataset's views: it needs --data");
    }
    if (o->devices) info_devices();
    const auto backend = make_backend("cpu", 1);
    std::unique_ptr<Model> model;
    if (!o->file.empty()) model = info_file(o->file, *backend);
    if (!o->data.data.empty()) info_data(o->data, o->targets, model.get());
    if (o->file.empty() && o->data.data.empty() && !o->devices)
      throw Error("info", "give a model or state file, --data PATH or --devices");
  });
}

}  // namespace lact::app
