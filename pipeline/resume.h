// Finished work survives an interrupt. An evaluation of several scenes rewrites report.json after each scene,
// marked incomplete ("complete": false), and after each batch of views of the scene under way, so Ctrl-C, kill or
// a crash keeps every finished scene and view; --resume reads it back and runs only the rest, refusing when the model,
// the flags or the scenes' camera files changed; a new run into the same --out first removes the images the previous
// run wrote, so none is left beside the new ones.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "datasets/scene.h"
#include "pipeline/evaluate.h"
#include "pipeline/run_agreement.h"

namespace lact {

// What a previous run left in --out: its report.json, when lact wrote it.
struct PreviousRun {
  bool found = false;     // a report.json that lact wrote
  bool complete = true;   // false: interrupted (or still running)
  std::string digest;     // what the interrupted run ran (resume_digest), to compare with this one's
  nlohmann::json header;  // its report header (model, config, data, size, views)
  std::vector<SceneReport> done;
  std::optional<SceneReport> partial;  // the scene it was in the middle of, with the views it finished
  std::vector<std::pair<std::string, std::string>> failed;  // scene, error
  std::vector<std::string> folders;                         // every scene folder it wrote or was to write
  // Reading report.json: the progress records of an interrupted run across ranks (progress_record_name), whose
  // folders are in `folders` too; a new run removes them with the report. Reading a rank's own record that is not
  // there: the other records in --out (check_resumable names them when they are another launch's).
  std::vector<std::string> records;
};

// Where an evaluation keeps its progress: report.json in one process; across ranks, where each rank evaluates
// its own scenes until their reports are merged at the end, each rank's own "report-rank-R-of-N.json".
std::string progress_record_name(bool distributed, int rank, int ranks);

// The record `name` under `out` (report.json, or a rank's), read back; found = false when there is none or lact
// did not write it. Error naming the file when lact wrote it but it cannot be read back. Reading report.json,
// the ranks' records beside it are read too (for their folders); so are they when a rank's own is not there.
PreviousRun read_previous_run(const RunOutput& out, const std::string& name = "report.json");

// Before a new run (not --resume): the view images (<view>.png, _gt.png, _diff.png, .npy) the previous run
// wrote in its scene folders are removed (those lact's by their content, pipeline/output_ownership.h), and a folder
// left empty with them. Other files are left alone.
void remove_previous_images(const PreviousRun& previous, const RunOutput& out);

// Before a path render writes its first frame: the frames a previous path render left in --out (each
// frame_NNNN.json holding one camera as lact writes it, with its .png and .npy when lact's) are removed, so no frame of
// another path is left beside this one's, even when this one is interrupted. Other files are left alone.
void remove_previous_frames(const RunOutput& out);

// What an evaluation of `scenes` runs, for --resume to compare: the command line (without the flags that do not
// change a result: --resume, --force, --max-seconds, --out), the model's and the LPIPS weights' content (`lpips`:
// empty when none), the scene state's content and path (`state`: an evaluation from --state; empty when none),
// each scene's name and camera file (its content, not its path) and, across ranks, how many (`ranks`: each
// resumes its own share of the scenes).
std::string resume_digest(const RunDigest& command_line, const std::string& model, const std::string& lpips,
                          const std::vector<const Scene*>& scenes, int ranks = 0, const std::string& state = "");

// Error naming the first difference when `previous` is not an interrupted run of the same digest (or there is
// none), so --resume never mixes two runs' results.
void check_resumable(const PreviousRun& previous, const std::string& digest, const std::string& report_path);

// The line the signal handler prints when a run of `total` scenes is interrupted after `done` of them, and in
// the middle of `partial` (the next scene, with the views it finished so far) when given.
std::string interrupted_note(size_t done, size_t total, const std::string& report_path,
                             const SceneReport* partial = nullptr);

// The views of `partial` (an interrupted run's scene) whose images are all in place as lact wrote them: those
// --resume keeps; a view whose files were removed or replaced meanwhile is rendered again.
std::vector<ViewReport> views_in_place(const SceneReport& partial, const RunOutput& out);

}  // namespace lact
