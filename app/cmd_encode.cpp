// lact encode: input views -> scene state file.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "app/commands.h"
#include "app/common.h"
#include "app/scene_inputs.h"
#include "core/model.h"
#include "core/scene_state_io.h"

namespace lact::app {

namespace {
struct EncodeOptions {
  CommonOptions common;
  SceneInputOptions inputs;
  std::string output;
};
}  // namespace

void add_encode_command(CLI::App& app) {
  auto options = std::make_shared<EncodeOptions>();
  CLI::App* command = app.add_subcommand("encode", "Encode input views into a scene state (per-layer fast weights)");
  add_scene_input_options(*command, options->inputs);
  command->add_option("-o,--output", options->output, "Scene state file to write (.safetensors)")->required();
  add_common_options(*command, options->common);
  command->callback([options]() {
    auto backend = make_backend(options->common);
    const PreparedInputs prepared = prepare_inputs(options->inputs, *backend);
    const auto start = std::chrono::steady_clock::now();
    const SceneState state = prepared.model->encode(prepared.views);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    save_scene_state(options->output, state, prepared.model->config(), *backend, prepared.metadata);
    std::printf("encoded %zu views of %s (%dx%d) in %.3f s -> %s\n", prepared.views.size(), prepared.scene_name.c_str(),
                state.height, state.width, seconds, options->output.c_str());
  });
}

}  // namespace lact::app
