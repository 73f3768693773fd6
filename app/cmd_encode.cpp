// lact encode: input views -> scene state file.
#include <chrono>
#include <cstdio>

#include "app/command_line.h"
#include "app/commands.h"
#include "app/flags.h"
#include "core/scene_state_io.h"
#include "pipeline/run.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact::app {

namespace {
struct EncodeOptions {
  CommonOptions common;
  DataOptions data;
  std::string model, output, state_dtype = "fp32", warnings = "on";
  bool force = false, quiet = false;
};
// Across ranks every rank reads the model and its share of the views (the Run's work); the lead writes the state.
void run_encode(EncodeOptions& o, const RunDigest& command_line) {
  StoredDtype dtype{};
  OutputOptions printed;  // encode writes only its state: of the output options, only what it prints
  printed.quiet = o.quiet;
  printed.warnings = o.warnings;
  Run run(o.common, printed, command_line, [&](RunOutput& out) {
    out.inputs.add(o.model);
    out.inputs.add(o.data.data);
    check_named_output(o.output, "--output", o.force, out.inputs);  // before any work
    dtype = parse_stored_dtype(o.state_dtype, "--state-dtype");
  });
  run.load_model(o.model);
  run.require_inputs(o.data, "--inputs", "encode needs input views");
  const SceneSelection selection = run.select(o.data);
  run.check_output(o.output, "--output", o.force);
  const auto start = std::chrono::steady_clock::now();
  const SceneState state = run.encode(selection);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.save_state(o.output, state, origin_metadata(o.data, selection, o.model), dtype);
  if (!run.leads()) return;
  std::printf("encoded %zu views of %s (%dx%d: %s) in %.3f s%s -> %s; inputs %s\n", selection.inputs.size(),
              terminal_text(selection.scene.name).c_str(), state.height, state.width,
              terminal_text(selection.size_rule).c_str(), seconds,
              run.distributed() ? (" on " + std::to_string(run.ranks()) + " ranks").c_str() : "",
              terminal_text(o.output).c_str(), views_text(selection.inputs).c_str());
}

}  // namespace

void add_encode_command(CLI::App& app) {
  auto o = std::make_shared<EncodeOptions>();
  CLI::App* command = app.add_subcommand("encode", "Encode input views into a scene state (per-layer fast weights)");
  command
      ->add_option("--model", o->model,
                   "Model weights (.safetensors with the config in its metadata), or a name from lact model fetch")
      ->transform(model_file())
      ->required();
  add_data_options(*command, o->data);
  inputs_without_targets(*command);
  command->add_option("-o,--output", o->output, "Scene state file to write (.safetensors)")->required();
  command->add_flag("--force", o->force, "Replace an existing output file (never one of the inputs)");
  command->add_flag("-q,--quiet", o->quiet, "No progress bar (encoded layers, on a terminal)");
  command
      ->add_option("--state-dtype", o->state_dtype,
                   "Store the fast weights as fp32, or bf16 (half the file; renders within bf16 rounding of fp32's)")
      ->capture_default_str();
  add_warnings_option(*command, o->warnings);
  add_common_options(*command, o->common);
  add_distributed_options(*command, o->common);
  add_time_limit_option(*command, o->common);
  command->callback([o, command]() { run_encode(*o, command_line_digest(*command)); });
}

}  // namespace lact::app
