// How much backend memory an encode needs at its peak, from the config and the input size alone, so that
// a scene too large for the device fails before allocating, with one line naming the estimate and what
// is free. Counted from the model code's allocations (embed, the three token buffers, the largest module's
// temporaries, the state of every layer); tests/test_memory_estimate.cpp holds it against the peak the CPU
// backend measures.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/config.h"
#include "core/model.h"

namespace lact {

struct EncodeMemory {
  int64_t tokens = 0;
  int64_t embedding = 0;    // bytes: pixels, ray tokens and tokens while embedding (before the layers' buffers)
  int64_t activations = 0;  // bytes: the token buffers x, y, out
  int64_t temporaries = 0;  // bytes: the largest module's scratch
  int64_t state = 0;        // bytes: fast weights / KV caches of every layer
  int64_t total() const {  // each part is at most 9e18 (saturated), so the sum is done in double
    const double layers = double(activations) + double(temporaries) + double(state);
    return layers > 9.0e18 ? int64_t(9.0e18) : std::max(embedding, int64_t(layers));
  }
};

// `state_views`: the views whose tokens the state holds when that is not `views` (-1): across ranks each
// rank encodes its share of the views but keeps every rank's KV cache.
EncodeMemory estimate_encode_memory(const ModelConfig& config, const ModelOptions& options, int64_t views,
                                    int height, int width, int64_t state_views = -1);

// Throws lact::Error when the estimate exceeds `available` bytes (available < 0: unknown, no check).
void check_encode_fits(const EncodeMemory& need, int64_t available, const std::string& device);

}  // namespace lact
