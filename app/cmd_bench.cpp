// lact bench: the flags, then bench/bench_run.h does the timing (tables, files, plot; see bench/).
#include <memory>

#include "app/command_line.h"
#include "app/commands.h"
#include "app/flags.h"
#include "bench/bench_run.h"
#include "system/error.h"

namespace lact::app {

namespace {

// --distributed, and the scaling model's flags (bench/bench_distributed.cpp runs both).
void add_distributed_bench_options(CLI::App& command, bench::BenchOptions& o) {
  add_distributed_options(command, o.common);
  CLI::Option* scaling =
      command.add_flag("--scaling", o.scaling,
                       "Print the model of scaling the paper's 1M-token scene over --ranks devices (compute vs "
                       "exchange per layer, memory per rank) instead of timing");
  // Without --scaling they were taken and ignored: a bench timed as if they meant something.
  command.add_option("--ranks", o.ranks, "--scaling: rank counts")->capture_default_str()->needs(scaling);
  command.add_option("--tflops", o.tflops, "--scaling: sustained TFLOP/s per device")
      ->capture_default_str()
      ->check(finite_range(1e-6, 1e9))
      ->needs(scaling);
  command.add_option("--bandwidth", o.bandwidths, "--scaling: link bandwidths in GB/s, e.g. NVLink,InfiniBand")
      ->capture_default_str()
      ->needs(scaling);
}

// What is timed: the config (or --model's file), scaled, and the models or TTT variants of it.
void add_model_options(CLI::App& command, bench::BenchOptions& o) {
  command
      .add_option("--config", o.config,
                  "Built-in config (lact_l24_d768_ttt2x, lact_l24_d768_ttt4x, lact_l14_d768_ttt2x), optionally "
                  "with a TTT variant: NAME:v2 (baseline, v1..v4, v6 or the authors' ttt_loss_type)")
      ->capture_default_str();
  // Given, they must be in range: 0 or less would silently mean "the config's own" (as when not given).
  command.add_option("--layers", o.layers, "Scale the config: layers")->check(CLI::Range(1, 1024));
  command.add_option("--dim", o.dim, "Scale the config: width (attention heads of 64, one fast-weight head)")
      ->check(CLI::Range(1, 16384));
  command.add_option("--model", o.model, "Time this LaCT model file instead of random weights");
  CLI::Option* models = command.add_option("--models", o.models, "Which models: lact,full")->capture_default_str();
  // Given beside --variants, --models was dropped without a word: a run asked for full attention timed none.
  command
      .add_option("--variants", o.variants,
                  "Time TTT variants of the config instead of --models, e.g. baseline,v1,v2,v3,v4,v6 (the "
                  "authors' ttt_loss_type keys work too); prints each one's speed-ups and state against the "
                  "baseline beside the FLOP count's prediction; --csv writes that table")
      ->excludes(models);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<bench::BenchOptions>();
  CLI::App* command = app.add_subcommand(
      "bench",
      "Time LaCT and the full-attention baseline on random weights (or --model's) over views x sizes (not a "
      "test): per row encode s, render FPS, state MiB and GFLOP/s, the ratios of the two models; the columns "
      "are explained under the table");
  add_model_options(*command, *o);
  command->add_option("--views", o->views, "Input view counts, e.g. 2,4,8,16,32,48")->capture_default_str();
  command->add_option("--size", o->sizes, "View sizes HxW, as every size flag (N: NxN), e.g. 128,256x448")
      ->capture_default_str();
  // Ranges with an upper end: CLI::PositiveNumber's message spelled out DBL_MAX (300 digits) and said "not in
  // range 0.000000 to ..." of the 0 it refused.
  command->add_option("--targets", o->targets, "Rendered views per measurement")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  command->add_option("--repeat", o->repeat, "Timed repetitions (median, minimum and spread reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  command->add_option("--warmup", o->warmup, "Untimed runs first")->capture_default_str()->check(CLI::Range(0, 10000));
  command->add_option("--max-seconds", o->max_seconds, "Skip sizes whose encode is predicted to take longer")
      ->capture_default_str()
      ->check(finite_range(0, 1e9));
  // One memory flag for every command (--memory-limit, below); the old name is refused with a pointer to it.
  command->add_option("--max-memory-gb", o->old_memory_flag, "")->group("");
  command->add_option("--json", o->json, "Write every row as JSON");
  command->add_option("--csv", o->csv,
                      "Write one row per precision, views and size as CSV: both models, their ratios (empty where "
                      "the table says not stated) and their timings' spreads");
  command->add_option("--plot", o->plot,
                      "Write a log-log PNG of encode time and render FPS against input tokens (not drawn, with "
                      "a line saying why, when a row's timings spread over 25%)");
  command->add_flag("--reference", o->reference,
                    "Also time the PyTorch reference (tools/reference) on the first LaCT size");
  command->add_flag("--profile", o->profile,
                    "One more run per size with device time by op (encode and render tables; the cuda backend)");
  command->add_option("--python", o->python, "Python with torch for --reference")->capture_default_str();
  command->add_flag("--force", o->force, "Replace existing --json / --csv / --plot files");
  command->add_flag("--no-fp32-baseline", o->no_fp32_baseline,
                    "With --precision bf16 / tf32: do not also time fp32 in the same run");
  command->add_flag("--gemm-libraries", o->gemm_libraries,
                    "Time the model's matrix-product shapes (first --views and --size) on each CPU library: OpenBLAS "
                    "fp32, oneDNN fp32, oneDNN bf16");
  CLI::Option* lpips = command->add_flag(
      "--lpips", o->lpips,
      "Time LPIPS per target view (random weights of --lpips-net; what render --lpips adds) against one rendered "
      "view of the config, at each --size");
  command->add_option("--lpips-net", o->lpips_net, "--lpips: the backbone, alex or vgg (VGG16, as LVSM reports)")
      ->capture_default_str()
      ->check(CLI::IsMember({"alex", "vgg"}))
      ->needs(lpips);
  add_common_options(*command, o->common);
  add_distributed_bench_options(*command, *o);
  command->callback([o, command]() {
    if (!o->old_memory_flag.empty())
      throw Error("--max-memory-gb",
                  "is --memory-limit now (GB, as for render and encode): sizes estimated over it "
                  "are skipped");
    bench::check_output_files(*o);  // before the ranks: a refusal is one line, with no MPI launch to unwind
    // Across ranks, the first exchange: every rank runs this bench (pipeline/run_agreement.h).
    if (o->common.distributed != "none") start_agreed_ranks(o->common, command_line_digest(*command));
    bench::run_bench(*o);
  });
}

}  // namespace lact::app
