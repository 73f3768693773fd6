#include "app/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "core/image_size.h"
#include "datasets/preprocess.h"
#include "kernels/backend_factory.h"
#include "pipeline/model_cache.h"
#include "system/error.h"

namespace lact::app {

void add_data_options(CLI::App& command, DataOptions& o) {
  command.add_option("--data", o.data,
                     "Scene data: LaCT index or opencv_cameras.json, Long-LRM/DL3DV dict, nerfstudio transforms.json, "
                     "NeRF-synthetic transforms_*.json, an index .txt, or a folder holding one; a COLMAP model "
                     "(a folder with sparse/0 and images/, or the model folder with --images)");
  command.add_option("--scene", o.scene, "Scene name when --data holds several");
  command.add_option(
      "--inputs", o.inputs,
      "Input views: 0,1,2 | 0-7 | uniform:N | random:N | fold8[:N] | all | rest (the views that are not --targets)");
  // The typed values are parsed here, as the flags are read: a bad one is refused before any work.
  command.add_option_function<std::string>(
      "--size", [&o](const std::string& text) { o.size = parse_size(text); },
      "Working size HxW (N: NxN), divisible by 8 (default: the model's training pixel count at the views' "
      "aspect, each side a multiple of 8: 48x88 for 270x480 views and a 64x64 model; the views' own "
      "size for a model that records no training size)");
  command
      .add_option_function<std::string>(
          "--background", [&o](const std::string& text) { o.background = parse_background(text); },
          "Background for RGBA images: white | black | grey | R,G,B")
      ->default_str("white");
  command
      .add_option_function<std::string>(
          "--normalize-poses", [&o](const std::string& text) { o.normalize_poses = parse_pose_normalization(text); },
          "Scene pose normalisation (mean pose, scale to [-1, 1]) from: none | inputs | all (views)")
      ->default_str("none");
  command.add_option("--seed", o.seed, "Seed for random:N and k-means view selection")
      ->capture_default_str()
      ->check(whole_number_up_to(UINT64_MAX));
  command
      .add_option("--downscale", o.downscale, "nerfstudio/DL3DV/COLMAP: read images_N instead of images (N = 2, 4, 8)")
      ->check(CLI::Range(1, 64));
  command.add_option("--images", o.images,
                     "COLMAP: the folder the model's image names are relative to (default: "
                     "images/ beside sparse/)");
}

void inputs_without_targets(CLI::App& command) {
  const std::string name = command.get_name();
  command.get_option("--inputs")
      ->description("Input views: 0,1,2 | 0-7 | uniform:N | random:N | fold8[:N] | all")
      ->check(CLI::Validator(
          [name](std::string& text) {
            if (text != "rest") return std::string();
            return "'rest' is every view that is not a target, and lact " + name +
                   " takes no --targets: name the input views (e.g. uniform:8)";
          },
          ""));
}

void add_common_options(CLI::App& command, CommonOptions& options) {
  command
      .add_option("--threads", options.threads,
                  "Worker threads (0 = the usable CPUs, " + std::to_string(max_threads()) +
                      " here, less those other running work wants now; a larger count is held to " +
                      std::to_string(max_threads()) + ", with a note)")
      ->check(CLI::Range(0, 1 << 30));
  command.add_option("--device,--backend", options.backend, "Compute device: cpu, or cuda where built with CUDA")
      ->check(CLI::IsMember(backend_names()));
  command
      .add_option(
          "--precision", options.precision,
          "Matrix products in fp32, tf32 (cuda) or bf16 (bf16 operands, fp32 accumulation; cuda, and the cpu where it "
          "has bf16 instructions: see lact info --devices)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
  command.add_flag("--no-graphs", options.no_graphs, "Render with direct kernel launches, not replayed CUDA graphs");
}

void add_distributed_options(CLI::App& command, CommonOptions& options) {
  command
      .add_option("--distributed", options.distributed,
                  "Run as the ranks of mpirun/srun: mpi (any device) or nccl (--device cuda, one GPU per rank)")
      ->check(CLI::IsMember({"none", "mpi", "nccl"}))
      ->capture_default_str();
  command
      .add_option(
          "--memory-limit", options.memory_limit_gb,
          "The most memory (GB) a scene may take in this process, checked before encoding (default: what is free)")
      ->check(finite_range(0.0, kMaxMemoryLimitGb));
  command.add_option("--scratch", options.scratch_dir,
                     "Where an encode whose views do not fit in memory even in chunks keeps its residual stream (a "
                     "file with no name, gone when the process ends; default $TMPDIR, else /tmp)");
}

void add_time_limit_option(CLI::App& command, CommonOptions& options) {
  command
      .add_option(
          "--max-seconds", options.max_seconds,
          "Refuse a scene (or path) whose encode and render are estimated to take longer: FLOPs over the "
          "rate measured here (default 0: none, but work estimated over an hour asks first on a terminal and is "
          "refused elsewhere; work over a minute says so)")
      ->check(finite_range(0, 1e9));
}

void add_warnings_option(CLI::App& command, std::string& warnings) {
  command
      .add_option("--warnings", warnings,
                  "Out-of-regime warnings (working size, camera layout and distances against the model's training, "
                  "a score below copying the nearest input): off | on (printed, in report.json) | error (refused)")
      ->check(CLI::IsMember({"off", "on", "error"}))
      ->capture_default_str();
}

CLI::Validator whole_number_up_to(uint64_t max) {
  // CLI11 reads an unsigned flag with strtoull, base 0: "-1" wraps to 2^64-1, 2^64 saturates to it, "010" is
  // octal 8. Only decimal digits whose value fits are a number here.
  const std::string range = "0 to " + std::to_string(max);
  return CLI::Validator(
      [max, range](std::string& text) {
        const bool digits =
            !text.empty() && text.size() <= 20 && text.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        const unsigned long long value = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
        if (!digits || errno == ERANGE || value > max)
          return "'" + text.substr(0, 40) + "' is not a whole number from " + range;
        return std::string();
      },
      "UINT in [" + range + "]");
}

CLI::Validator model_file() {
  return CLI::Validator(
      [](std::string& text) {
        // Its Error ("--model: NAME is an official checkpoint that is not downloaded yet: run lact model fetch
        // NAME") goes out as it is: returned, CLI11 would put "--model: " before it again and main "(see lact COMMAND
        // --help)" after it, though the line already says what to do.
        text = resolve_model_argument(text);
        return std::string();
      },
      "FILE|NAME");
}

CLI::Validator finite_range(double min, double max) {
  // CLI::Range lets NaN through (every comparison with it is false) and reads "inf": a value must be finite too.
  char text[64];
  std::snprintf(text, sizeof text, "%g to %g", min, max);
  const std::string range = text;
  return CLI::Validator(
      [min, max, range](std::string& text) {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value) || value < min || value > max)
          return "'" + text.substr(0, 40) + "' is not a finite number from " + range;
        return std::string();
      },
      "FINITE in [" + range + "]");
}

void add_scene_source_options(CLI::App& command, session::SceneOptions& options, std::vector<std::string>* states) {
  command
      .add_option("--model", options.model,
                  "Model weights (.safetensors with the config in its metadata), or a name from lact model fetch")
      ->transform(model_file());
  add_data_options(command, options.data);
  if (states)
    command.add_option("--state", *states,
                       "Scene state from `lact encode` (replaces --inputs); several: one scene each");
  else
    command.add_option("--state", options.state, "Scene state from `lact encode` (replaces --inputs)");
  command
      .add_option("--targets", options.targets,
                  "Test views (measured against their ground truth; [ ] snaps through inputs and these): 3,4 | rest")
      ->capture_default_str();
  command.add_option("--lpips", options.lpips,
                     "LPIPS weights for the test views (default: those of lact model fetch lpips, when fetched)");
  command.add_flag("--no-lpips", options.no_lpips, "Do not measure LPIPS on test views, although it is fetched");
  // Run after --lpips and --no-lpips are stored (CLI11 runs the options' callbacks in the order they were added).
  command
      .add_option_function<std::string>(
          "--lpips-net",
          [&options](const std::string& net) {
            if (!options.no_lpips) options.lpips = lpips_weights_of_net(*lpips_net_named(net), options.lpips);
          },
          "LPIPS with this backbone: alex (lact model fetch lpips), vgg (lpips-vgg); with --lpips FILE, checks the "
          "file holds it")
      ->check(CLI::IsMember({"alex", "vgg"}));
  command.add_option("--camera", options.camera, "Start on this scene view (default: the first test view)")
      ->check(CLI::NonNegativeNumber);
  command
      .add_option("--render-threads", options.render_threads,
                  "Threads of the render thread (0: one for views under ~1 GFLOP, else --threads)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

}  // namespace lact::app
