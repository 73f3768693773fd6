// lact model: the official LaCT checkpoints: list them (and which are cached), fetch one (download, check,
// convert, record: pipeline/model_fetch.h), or convert a .pt file with the project's converter from anywhere.

#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "app/commands.h"
#include "pipeline/lpips_fetch.h"
#include "pipeline/model_convert.h"
#include "pipeline/model_fetch.h"
#include "pipeline/official_models.h"
#include "system/error.h"
#include "system/output_files.h"
#include "system/terminal_text.h"

namespace lact::app {

namespace {

void list_models(const std::string& cache_dir) {
  const std::string dir = model_cache_dir(cache_dir);
  std::printf("%-18s %-7s %-10s %-20s %-7s %-9s %s\n", "name", "kind", "trained", "config", "inputs", "download",
              "cached");
  for (const OfficialModel& m : official_models()) {
    const std::optional<CachedModel> cached = cached_model(dir, m.name);
    const std::string size = std::to_string(m.height) + "x" + std::to_string(m.width);
    const std::string views = m.input_views ? std::to_string(m.input_views) : "-";
    std::printf("%-18s %-7s %-10s %-20s %-7s ~%-8s %s\n", m.name.c_str(), m.kind.c_str(), size.c_str(),
                m.config.c_str(), views.c_str(), size_text(m.approx_bytes).c_str(),
                cached ? terminal_text(cached->path).c_str() : "no");
  }
  // The downloads: torchvision's whole network (its classifier too) and the linear layers.
  for (const auto& [network, download] : {std::pair{&kLpipsAlexNet, "244 MB"}, std::pair{&kLpipsVgg16, "528 MB"}}) {
    const std::optional<CachedModel> lpips = cached_model(dir, network->cache_name);
    std::printf("%-18s %-7s %-10s %-20s %-7s ~%-8s %s\n", network->cache_name, "metric", "-", network->format, "-",
                download, lpips ? terminal_text(lpips->path).c_str() : "no");
  }
  std::printf("cache: %s; download sizes are the fp32 tensors of each config (the hub's size is checked)\n",
              terminal_text(dir).c_str());
}

void add_fetch(CLI::App& model) {
  auto o = std::make_shared<FetchOptions>();
  CLI::App* fetch = model.add_subcommand(
      "fetch", "Download an official checkpoint (resumable, checked against the hub's SHA-256), convert and cache it");
  fetch
      ->add_option("name", o->name,
                   "The checkpoint (lact model list): obj_res256, scene_res144x256, ...; lpips, lpips-vgg: the "
                   "LPIPS metric's weights with AlexNet, VGG16 (render --lpips, --lpips-net vgg)")
      ->required();
  fetch->add_option("--cache-dir", o->cache_dir, "Cache folder (default $XDG_CACHE_HOME/lact, else ~/.cache/lact)");
  fetch->add_option("--hub", o->hub,
                    "A Hugging Face mirror holding the hub's paths (URL/airsplay/lact_nvs/resolve/main/NAME.pt; "
                    "default $LACT_HUB, else https://huggingface.co)");
  fetch->add_option("--config", o->config,
                    "The config the converter uses instead of the official one (a mirror's own weights; default "
                    "$LACT_HUB_CONFIG)");
  fetch->add_flag("--force", o->force, "Fetch and convert again although it is cached");
  fetch->add_flag("-q,--quiet", o->quiet, "No progress bar");
  fetch->callback([o]() {
    if (const std::optional<LpipsNet> net = lpips_fetch_name(o->name)) {
      const CachedModel m = fetch_lpips_weights(*o, *net);
      std::printf("%s: %s; lact render --targets ... measures LPIPS with it (--lpips%s)\n", m.name.c_str(),
                  terminal_text(m.path).c_str(), *net == LpipsNet::vgg ? " --lpips-net vgg" : "");
      return;
    }
    const CachedModel m = fetch_official_model(*o);
    std::printf("%s: %s (%s, trained at %dx%d%s); use --model %s\n", m.name.c_str(), terminal_text(m.path).c_str(),
                m.kind.c_str(), m.height, m.width,
                m.input_views ? (" with " + std::to_string(m.input_views) + " input views").c_str() : "",
                m.name.c_str());
  });
}

struct ConvertOptions {
  std::string checkpoint, config, output;
  std::vector<std::string> lpips;  // BACKBONE.pth LINEAR.pth
  bool force = false;
};

void add_convert(CLI::App& model) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* convert = model.add_subcommand(
      "convert", "Convert a LaCT checkpoint (.pt) to the .safetensors lact reads (tools/convert_checkpoint.py)");
  CLI::Option* checkpoint = convert->add_option("checkpoint", o->checkpoint, "The .pt file");
  CLI::Option* lpips = convert->add_option("--lpips", o->lpips,
                                           "Convert LPIPS's two published files instead: torchvision's "
                                           "alexnet-owt-7be5be79.pth and the lpips package's v0.1 alex.pth, or "
                                           "vgg16-397923af.pth and vgg.pth (the backbone told from the files)");
  lpips->expected(2)->excludes(checkpoint);
  convert->add_option("--config", o->config,
                      "Its config: a .yaml/.json file or a built-in name (default: known from an official file name)");
  convert->add_option("-o,--output", o->output, "The .safetensors to write")->required();
  convert->add_flag("--force", o->force, "Replace an existing output");
  convert->callback([o]() {
    // As every named output: never one of the files it converts (`-o model.pt --force` replaced the checkpoint).
    InputFiles inputs;
    for (const std::string& file : {o->checkpoint, o->config}) inputs.add(file);  // a built-in name is no file
    for (const std::string& file : o->lpips) inputs.add(file);
    check_named_output(o->output, "--output", o->force, inputs);
    if (!o->lpips.empty()) {
      if (!o->config.empty()) throw Error("--config", "does not apply to --lpips (its two files have one layout)");
      std::printf("%s\n", terminal_text(convert_lpips_weights(o->lpips[0], o->lpips[1], o->output)).c_str());
      return;
    }
    if (o->checkpoint.empty())
      throw Error("lact model convert", "name the checkpoint (.pt) or --lpips BACKBONE LINEAR");
    std::printf("%s\n", terminal_text(convert_checkpoint(o->checkpoint, o->config, o->output)).c_str());
  });
}

}  // namespace

void add_model_command(CLI::App& app) {
  CLI::App* model = app.add_subcommand("model",
                                       "The official LaCT checkpoints: list, fetch (download, check, "
                                       "convert, cache: then --model NAME), convert a .pt file");
  model->require_subcommand(1);
  auto cache_dir = std::make_shared<std::string>();
  CLI::App* list =
      model->add_subcommand("list", "The official checkpoints, what each was trained on, and which are cached");
  list->add_option("--cache-dir", *cache_dir, "Cache folder (default $XDG_CACHE_HOME/lact, else ~/.cache/lact)");
  list->callback([cache_dir]() { list_models(*cache_dir); });
  add_fetch(*model);
  add_convert(*model);
}

}  // namespace lact::app
