// The bars of one scene's stages (encode layers, rendered views) as the model reports them (Model::WorkProgress):
// each stage a transient bar with its ETA, under the run's scene bar. Only on a terminal, and not when quiet.
#pragma once

#include <memory>
#include <string>

#include "core/model.h"
#include "pipeline/progress.h"

namespace lact {

// The model's progress callback drawing those bars; empty (no callback, no synchronising) when none would show.
Model::WorkProgress stage_progress_bars(bool quiet);

// `bars` for a scene's targets rendered in batches, one Model::render call each (pipeline/evaluate.cpp): the
// calls' "render views" counts added up into one stage of `views` views; other stages passed on as they are.
Model::WorkProgress batched_render_progress(Model::WorkProgress bars, size_t views);

}  // namespace lact
