// `lact bench`'s options, as app/cmd_bench.cpp reads them from the command line.
#pragma once

#include <string>

#include "pipeline/backend_options.h"

namespace lact::bench {

struct BenchOptions {
  CommonOptions common;
  std::string config = "lact_l24_d768_ttt2x", model, views = "2", sizes = "128", models = "lact,full", variants;
  std::string json, csv, plot, python = "/usr/bin/python3";
  int layers = 0, dim = 0, targets = 2, repeat = 5, warmup = 1;
  double max_seconds = 600;
  std::string old_memory_flag;  // --max-memory-gb, refused (--memory-limit is common.memory_limit_gb)
  bool reference = false, profile = false, force = false, no_fp32_baseline = false, gemm_libraries = false;
  bool lpips = false;              // --lpips: LPIPS per view against one rendered view (bench/bench_lpips.cpp)
  std::string lpips_net = "alex";  // --lpips-net: its backbone, alex or vgg
  // --distributed / --scaling (bench/bench_distributed.cpp)
  bool scaling = false;
  std::string ranks = "1,2,4,8,16,32,64", bandwidths = "400,50";
  double tflops = 400;
};

}  // namespace lact::bench
