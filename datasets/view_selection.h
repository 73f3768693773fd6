// Which views are inputs and which are targets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/scene.h"

namespace lact {

// A selection spec, as given to --inputs / --targets:
//   "0,1,2", "0-7,12"  explicit indices (ranges inclusive)
//   "uniform:N"        N views evenly spread over the scene (index round(i * V / N))
//   "random:N"         N distinct views drawn with `seed`, sorted
//   "fold8"            targets: every 8th view (0, 8, 16, ...); inputs: the file's k-means list
//                      (Long-LRM fold_8_kmeans_N_input) when present, else k-means with 32 clusters
//   "fold8:N"          inputs: k-means with N clusters over the non-target views
//   "all"              every view; "rest": every view not in `other`
// `is_targets` says which side the spec is for (fold8 means different things); `other` is the other side's
// selection (for "rest"; may be empty). Errors name `flag` and, for out-of-range indices, the scene file.
std::vector<int> select_views(const std::string& spec, const Scene& scene, bool is_targets,
                              const std::vector<int>& other, uint64_t seed, const std::string& flag);

// Every 8th view: the DL3DV / Long-LRM evaluation targets.
std::vector<int> fold8_targets(int view_count);

// Long-LRM's k-means input choice: cluster the 6-D [camera centre, forward axis] of the `candidates`
// into `count` clusters (k-means++ seeded with `seed`, best of several restarts), take the candidate
// nearest each centre, sorted. Deterministic for a seed (not sklearn's exact clusters).
std::vector<int> kmeans_views(const Scene& scene, const std::vector<int>& candidates, int count, uint64_t seed);

}  // namespace lact
