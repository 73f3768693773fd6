// `lact bench`'s options and the pieces its single-process and distributed runs share (app/cmd_bench.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "pipeline/backend_options.h"

namespace lact::app {

struct BenchOptions {
  CommonOptions common;
  std::string config = "lact_l24_d768_ttt2x", model, views = "2", sizes = "128", models = "lact,full", variants;
  std::string json, csv, plot, python = "/usr/bin/python3";
  int layers = 0, dim = 0, targets = 2, repeat = 5, warmup = 1;
  double max_seconds = 600, max_memory_gb = 0;
  bool reference = false, profile = false, force = false, no_fp32_baseline = false, gemm_libraries = false;
  // --distributed / --scaling (app/bench_distributed.cpp)
  bool scaling = false;
  std::string ranks = "1,2,4,8,16,32,64", bandwidths = "400,50";
  double tflops = 400;
};

double now_seconds();
std::vector<int> parse_list(const std::string& text, const char* flag, int max);
// The built-in config, scaled by --layers / --dim.
ModelConfig lact_config(const BenchOptions& o);
// The models to time: --models (lact, full), or every --variants entry.
std::vector<std::pair<std::string, ModelConfig>> bench_models(const BenchOptions& o, const ModelConfig& lact);
// Cameras on a circle looking at the origin; images of uniform noise.
std::vector<PosedImage> bench_views(int count, int height, int width, bool with_images, uint64_t seed);

// `lact bench --distributed mpi` (encode across ranks against one rank, bytes per layer) and `--scaling`
// (the model of scaling to many GPUs).
void run_distributed_bench(const BenchOptions& o);
// `lact bench --gemm-libraries` (app/bench_gemm.cpp).
void run_gemm_library_bench(const BenchOptions& o);
void add_distributed_bench_options(CLI::App& command, BenchOptions& o);

}  // namespace lact::app
