// A config reshaped for timing (lact bench): scaled to other layers / width, and the paper's full-attention
// baseline in place of the TTT layer. Both edit the config's JSON and parse it again, so the result passes the
// same checks as a config read from a file.
#pragma once

#include "core/config.h"

namespace lact {

// `config` with `layers` layers and width `dim` (0 or less keeps the config's own). With a new width, attention
// modules get heads of 64 where `dim` allows (one head of `dim` otherwise) and TTT modules one fast-weight head
// of `dim`; every other param is kept.
ModelConfig scaled_config(const ModelConfig& config, int layers, int dim);

// The same backbone with every TTT module replaced by global attention over all input tokens (length_dim "vl",
// QK norm) with the head size of the block's first attention module (Error when there is a TTT module but no
// attention module).
ModelConfig with_full_attention(const ModelConfig& config);

}  // namespace lact
