// One measurement of `lact bench`: a model (LaCT, a TTT variant, full attention) at one view count and size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace lact::bench {

// The median, minimum and maximum of timed samples.
struct Samples {
  std::vector<double> values;
  double median() const;
  double min() const;
  double max() const;
  double spread() const { return values.empty() ? 0.0 : (max() - min()) / median(); }  // (max - min) / median
};

struct Row {
  std::string model;  // "lact", "full", or a variant's name ("baseline", "v1", ...)
  std::string precision;
  int views = 0, height = 0, width = 0;
  int64_t tokens = 0;
  double open_s = -1;       // opening the model file (--model; -1: random weights)
  double gemm_gflops = 0;   // the backend's n^3 product rate at this row's precision (the ceiling)
  std::string device;       // the backend's description
  int threads = 0;          // the CPU threads it ran on (--threads, or the default the backend used)
  std::string attention;    // the code that ran the row's attention: "cpu", "own (why)", "cudnn 9.19.0", ...
  std::string activations;  // the storage of the activations between products: "float32" or "bfloat16" (CUDA)
  Samples encode, render;   // seconds per encode, seconds per rendered view (the frames after a scene's first)
  Samples first_frame;      // seconds to render the targets the first time after an encode
  // Medians: encode seconds, rendered views per second, and what follows from them.
  double encode_s = 0, render_fps = 0, state_mib = 0, encode_gflops = 0, render_gflops = 0;
  double encode_gflop = 0, render_gflop = 0;  // counted FLOPs of one encode, one rendered view (core/flop_model.h)
  std::string skipped;                        // why it was not run
  std::vector<OpProfile> encode_profile, render_profile;  // with --profile, where the backend measures
};

// A ratio of two timed medians is stated only when their spreads ((max - min) / median) together stay within
// kTrustedSpread: a busy machine (other jobs, spinning threads) once drew LaCT slower than full attention at
// every size, the opposite of the truth, from timings whose spreads were 40-300%.
constexpr double kTrustedSpread = 0.25;
// "" when `a` over `b` can be stated; else why not, naming each measurement (`what_a`, `what_b`) and its spread.
std::string untrusted_ratio(const Samples& a, const std::string& what_a, const Samples& b, const std::string& what_b);
// "" when every row's encode and render timings are within kTrustedSpread (the plot can be drawn); else the
// first row that is not and its spread.
std::string untrusted_rows(const std::vector<Row>& rows);

// With --variants: every variant beside the baseline measured in the same run (speed-ups, state ratio, the
// FLOP count's prediction), as a markdown table and as CSV.
void print_variant_table(const std::vector<Row>& rows);
std::string variant_csv(const std::vector<Row>& rows);

}  // namespace lact::bench
