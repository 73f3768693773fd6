// The ranks of one job must run the same command on the same inputs: nothing else stops an MPMD launch (or a
// node with another copy of a file) from mixing results or from leaving ranks in different collectives for ever.
// A run agrees twice, each time with one all-gather of a short digest, before any collective work:
//   1. the command line: the subcommand and its flags as given (file flags only as given or not, since paths
//      may differ between nodes; outputs by absolute path, since rank 0 alone writes them);
//   2. the inputs: the model's config and content, the state's and the camera path's content, the scene (its
//      cameras, the selected views, their images' content), the working size and the pose transform.
// Files are compared by content identity (size and a fast hash, sampled above 64 MiB: system/file_identity.h).
// On a difference every rank stops with one line naming the lowest rank that differs from rank 0 and the
// field; a rank that fails while describing its inputs (a missing file) fails every rank with its line.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/model.h"
#include "pipeline/distribution.h"
#include "pipeline/scene_selection.h"

namespace lact {

// What one rank runs, field by field in an order every rank shares.
class RunDigest {
 public:
  struct Field {
    std::string name;   // what the message names: "--inputs", "the subcommand", "--model (its content)"
    std::string hash;   // what is compared: 16 hex digits of the value's hash
    std::string shown;  // the value as the message shows it (shortened)
  };
  // A value compared exactly (a flag as given, a size, an index list).
  void add(const std::string& name, const std::string& value);
  // A file compared by its content identity ("cannot be read" when it cannot: the same on every rank is fine),
  // shown with `label` (its file name) when given.
  void add_file(const std::string& name, const std::string& path, const std::string& label = "");
  // Shows the field added last as `shown` (a summary for a value too long to show).
  void show_last_as(const std::string& shown);
  const std::vector<Field>& fields() const { return fields_; }

  std::string encode() const;
  // Throws Error when `text` is not an encoded digest.
  static RunDigest decode(const std::string& text);

 private:
  std::vector<Field> fields_;
};

// Starts the ranks --distributed asks for (none: one process, nothing to agree) and, on the first call in this
// process, agrees on `command_line` (the first exchange of the run; throws RankFailure on every rank when the
// ranks' command lines differ). Later calls return the same ranks.
Distribution start_agreed_ranks(const CommonOptions& options, const RunDigest& command_line);

// The first field where `other` differs from `first`: its name and each side's value as shown ('...' quoted, or
// "nothing" where a side lacks it). Empty name when they agree.
struct DigestDifference {
  std::string name, first, other;
};
DigestDifference first_difference(const RunDigest& first, const RunDigest& other);

// The message for the first field where `other` (rank `rank` of `ranks`) differs from rank 0's `first`, or ""
// when they agree.
std::string digest_difference(const RunDigest& first, const RunDigest& other, int rank, int ranks);

// Gathers every rank's digest (`describe` fills this rank's) and throws RankFailure on every rank when any rank
// failed to describe its run or any digest differs from rank 0's. Nothing happens in one process.
void agree_on_run(const Distribution& d, const std::function<void(RunDigest&)>& describe);

// The inputs a run reads, for the second agreement.
struct RunInputs {
  std::string model_path;  // with `model`: its config and content
  const Model* model = nullptr;
  std::string state_path, camera_path;        // --state and --path, when given
  std::string lpips_path;                     // the LPIPS weights an evaluation measures with, when any
  const SceneSelection* selection = nullptr;  // one scene: its cameras, inputs, size, pose and their images
  std::string targets_spec;                   // its --targets (resolved with `seed`; their images compared too)
  uint64_t seed = 0;
  const SceneList* scenes = nullptr;  // several scenes shared out: their cameras and image sizes
};
void describe_inputs(const RunInputs& inputs, RunDigest& digest);
// agree_on_run(d, describe_inputs(inputs)).
void agree_on_inputs(const Distribution& d, const RunInputs& inputs);

}  // namespace lact
