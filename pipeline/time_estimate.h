// How long a piece of work will take, before it runs: its FLOPs from the model's config (core/flop_model.h, as
// `lact bench` counts them) over a rate measured here. A run estimated over a minute says so in one line, and
// --max-seconds refuses one estimated over it.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"

namespace lact {

// One piece of work: encoding `encode_views` views at height x width (of `state_views` in all, whose tokens
// full attention reads while rendering), then rendering views at their sizes.
struct WorkSize {
  int64_t encode_views = 0, state_views = 0;
  int height = 0, width = 0;  // the input views' size
  struct Renders {
    int height, width;
    int64_t views;
  };
  std::vector<Renders> renders;
};
double work_flops(const ModelConfig& config, const WorkSize& work);
// "encoding 8 views at 4096x4096 and rendering 2 views"
std::string work_text(const WorkSize& work);

// The rate no backend runs the model below (GFLOP/s): work under a minute even at it needs no measurement.
constexpr double kSlowestGflops = 1.0;

// The model's own rate here, in the FLOPs work_flops counts per second: one view of 16x16 patches encoded twice,
// the second timed (the first allocates). A rate in counted FLOPs absorbs what the count leaves out (norms,
// activations, small heads): a matrix product's rate overstated the shipped model's about 15 times.
double model_gflops(const Model& model);

// "45 s", "3.2 min", "1.5 h".
std::string duration_text(double seconds);

}  // namespace lact
