// lact encode: input views -> scene state file.
#include <chrono>
#include <cstdio>

#include "app/commands.h"
#include "app/flags.h"
#include "pipeline/backend_options.h"
#include "pipeline/evaluate.h"
#include "pipeline/output_files.h"
#include "pipeline/scene_selection.h"
#include "core/error.h"
#include "core/scene_state_io.h"

namespace lact::app {

namespace {
struct EncodeOptions {
  CommonOptions common;
  DataOptions data;
  std::string model, output;
  bool force = false;
};
}  // namespace

void add_encode_command(CLI::App& app) {
  auto o = std::make_shared<EncodeOptions>();
  CLI::App* command = app.add_subcommand("encode", "Encode input views into a scene state (per-layer fast weights)");
  command->add_option("--model", o->model, "Model weights (.safetensors with the config in its metadata)")->required();
  add_data_options(*command, o->data);
  command->add_option("-o,--output", o->output, "Scene state file to write (.safetensors)")->required();
  command->add_flag("--force", o->force, "Replace an existing output file (never one of the inputs)");
  add_common_options(*command, o->common);
  command->callback([o]() {
    InputFiles inputs;
    inputs.add(o->model);
    inputs.add(o->data.data);
    check_named_output(o->output, "--output", o->force, inputs);  // before any work
    auto backend = make_backend(o->common);
    auto model = load_model_for(o->model, *backend);
    apply_model_defaults(o->data, *model, true);
    if (o->data.inputs.empty()) throw Error("--inputs", "encode needs input views");
    const SceneSelection selection = select_scene_views(o->data, model->config().patch_size);
    add_scene_inputs(selection, inputs);
    check_named_output(o->output, "--output", o->force, inputs);
    check_memory_for(*model, selection, "--size");
    const std::vector<PosedImage> views = selected_views(selection, selection.inputs, true);
    const auto start = std::chrono::steady_clock::now();
    const SceneState state = model->encode(views);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    save_scene_state(o->output, state, model->config(), *backend, origin_metadata(o->data, selection, o->model));
    std::printf("encoded %zu views of %s (%dx%d) in %.3f s -> %s\n", views.size(), selection.scene.name.c_str(),
                state.height, state.width, seconds, o->output.c_str());
  });
}

}  // namespace lact::app
