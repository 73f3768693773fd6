// What every `lact bench` mode builds its runs from: the clock, the option lists, the configs and models to time,
// and the synthetic views (the single-process, distributed and GEMM runs share them).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_options.h"
#include "core/model.h"
#include "system/clock.h"

namespace lact::bench {

using lact::now_seconds;  // system/clock.h
// "2,4,8": every item a whole number in 1..max, else Error naming `flag`.
std::vector<int> parse_list(const std::string& text, const char* flag, int max);
// "128,256x512": sizes HxW as every size flag writes them (a single N: NxN), each side in 1..max; Error naming
// `flag` otherwise. {height, width} each.
std::vector<std::pair<int, int>> parse_size_list(const std::string& text, const char* flag, int max);
// Before any timing: every size divisible by the config's patch, else Error naming --size (the model refused it
// later, after the GEMM ceiling's seconds, in a line that did not name the flag).
void check_patch_divides(const std::vector<std::pair<int, int>>& sizes, int patch);
// The built-in config, scaled by --layers / --dim (core/config_scaling.h).
ModelConfig lact_config(const BenchOptions& o);
// The models to time: --models (lact, full), or every --variants entry.
std::vector<std::pair<std::string, ModelConfig>> bench_models(const BenchOptions& o, const ModelConfig& lact);
// Cameras on a circle looking at the origin; images of uniform noise.
std::vector<PosedImage> bench_views(int count, int height, int width, bool with_images, uint64_t seed);

}  // namespace lact::bench
