// lact encode: input views -> scene state file.
#include <chrono>
#include <cstdio>

#include "app/command_line.h"
#include "app/commands.h"
#include "app/flags.h"
#include "core/error.h"
#include "core/scene_state_io.h"
#include "core/terminal_text.h"
#include "pipeline/backend_options.h"
#include "pipeline/distribution.h"
#include "pipeline/evaluate.h"
#include "pipeline/output_files.h"
#include "pipeline/run_agreement.h"
#include "pipeline/scene_selection.h"

namespace lact::app {

namespace {
struct EncodeOptions {
  CommonOptions common;
  DataOptions data;
  std::string model, output, state_dtype = "fp32";
  bool force = false;
};
// Across ranks every rank reads the model and its share of the views; rank 0 writes the state.
void run_encode(EncodeOptions& o, const RunDigest& command_line) {
  InputFiles inputs;
  inputs.add(o.model);
  inputs.add(o.data.data);
  StoredDtype dtype{};
  on_every_rank(start_agreed_ranks(o.common, command_line), [&] {
    check_named_output(o.output, "--output", o.force, inputs);  // before any work
    dtype = parse_stored_dtype(o.state_dtype, "--state-dtype");
  });
  RunBackend run = start_run_backend(o.common);
  const Distribution& d = run.distribution;
  std::unique_ptr<Model> model;
  SceneSelection selection;
  on_every_rank(d, [&] {
    model = load_model_for(o.model, *run.backend);
    apply_model_defaults(o.data, *model, true);
    if (o.data.inputs.empty()) throw Error("--inputs", "encode needs input views");
    selection = select_scene_views(o.data, model->config().patch_size);
    add_scene_inputs(selection, inputs);
    check_named_output(o.output, "--output", o.force, inputs);
  });
  RunInputs read;
  read.model_path = o.model, read.model = model.get(), read.selection = &selection;
  agree_on_inputs(d, read);
  const auto start = std::chrono::steady_clock::now();
  const SceneState state = encode_selection(*model, selection, d);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  on_every_rank(d, [&] {
    if (d.leads())
      save_scene_state(o.output, state, model->weights(), *run.backend, origin_metadata(o.data, selection, o.model),
                       dtype);
  });
  if (!d.leads()) return;
  std::printf("encoded %zu views of %s (%dx%d) in %.3f s%s -> %s\n", selection.inputs.size(),
              terminal_text(selection.scene.name).c_str(), state.height, state.width, seconds,
              d.active() ? (" on " + std::to_string(d.size()) + " ranks").c_str() : "",
              terminal_text(o.output).c_str());
}

}  // namespace

void add_encode_command(CLI::App& app) {
  auto o = std::make_shared<EncodeOptions>();
  CLI::App* command = app.add_subcommand("encode", "Encode input views into a scene state (per-layer fast weights)");
  command->add_option("--model", o->model, "Model weights (.safetensors with the config in its metadata)")->required();
  add_data_options(*command, o->data);
  command->add_option("-o,--output", o->output, "Scene state file to write (.safetensors)")->required();
  command->add_flag("--force", o->force, "Replace an existing output file (never one of the inputs)");
  command
      ->add_option("--state-dtype", o->state_dtype,
                   "Store the fast weights as fp32, or bf16 (half the file; renders within bf16 rounding of fp32's)")
      ->capture_default_str();
  add_common_options(*command, o->common);
  add_distributed_options(*command, o->common);
  command->callback([o, command]() { run_encode(*o, command_line_digest(*command)); });
}

}  // namespace lact::app
