// A command run as several ranks (--distributed mpi|nccl under mpirun or srun), as the pipeline sees it: which
// rank this is, how ranks agree on failures, how a scene's input views and target views are shared out, and how
// the per-rank reports come together on rank 0. A default Distribution is one process. The commands reach
// these through a Run (pipeline/run.h), which alone decides how a run's work is shared.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "core/model.h"
#include "distributed/distributed.h"
#include "pipeline/backend_options.h"
#include "pipeline/report.h"
#include "pipeline/scene_selection.h"

namespace lact {

struct Distribution {
  Ranks* ranks = nullptr;            // null: one process
  Collective* collective = nullptr;  // the model's exchanges while encoding
  bool active() const { return ranks != nullptr; }
  int rank() const { return ranks ? ranks->rank() : 0; }
  int size() const { return ranks ? ranks->size() : 1; }
  // Rank 0 prints, writes the shared outputs (state, report) and shows progress.
  bool leads() const { return rank() == 0; }
};

// The backend of a run and, with --distributed, its ranks and collective (each rank's backend on its own GPU
// under nccl). Creating the backend is agreed: a rank without its device stops every rank with one line.
struct RunBackend {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Collective> collective;
  Distribution distribution;
};
RunBackend start_run_backend(const CommonOptions& options);

// Runs `step` on every rank; a failure on any rank fails every rank with one line (Ranks::agree).
void on_every_rank(const Distribution& d, const std::function<void()>& step);

// This rank's share [begin, end) of `count` items.
std::pair<size_t, size_t> share_of(const Distribution& d, size_t count);

// Every rank's part of a report (scenes in rank order; the header of the lowest rank that has one): the whole
// report, on every rank.
Report merge_reports(const Distribution& d, const Report& mine);

}  // namespace lact
