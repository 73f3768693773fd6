// One run of a command, built once: its backend, its ranks (--distributed), its memory budget, its outputs and
// its progress. Every front end (the commands, the viewer, the Python module, `lact serve`) asks it to encode,
// evaluate or render; it alone decides how work is shared across ranks, merges the ranks' reports, and checks
// memory once for each piece of work (a scene, a camera path, a rendered size) before anything is read or
// allocated, naming the flag that sets the size. Its callers hold no rank logic: what rank 0 alone prints or
// writes, they ask leads().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/scene_state_io.h"
#include "datasets/camera_path_io.h"
#include "pipeline/distribution.h"
#include "pipeline/evaluate.h"
#include "pipeline/guard_rails.h"
#include "pipeline/memory_check.h"
#include "pipeline/run_agreement.h"
#include "pipeline/scene_selection.h"
#include "pipeline/time_estimate.h"

namespace lact {

class ScratchFile;

// The scene a run encodes or opens, and what it renders of it.
struct SceneRequest {
  std::string model;    // --model (with a state: the one its metadata names when empty)
  std::string state;    // --state: a saved scene state instead of encoding --inputs
  DataOptions data;     // --data, --scene, --inputs, --size ...
  std::string targets;  // evaluate: the views rendered and measured against their ground truth
  std::string video;    // render_path: also this MP4 (a named output: --force replaces it)
  int fps = 30;
  std::string command = "render";  // names the error when neither --inputs nor --state is given
  // --allow-input-targets: a target that is also an input is meant (else refused: its score is no novel view).
  bool allow_input_targets = false;
  // --resume: finish the interrupted evaluation whose incomplete report.json is in --out (pipeline/resume.h).
  bool resume = false;
  std::string lpips;  // evaluate, --lpips: also measure LPIPS with these weights (core/lpips.h); empty: not
  // The weights above are the cached ones taken without --lpips: a scene too small for LPIPS is measured
  // without it (a note) instead of refused.
  bool lpips_by_default = false;
};

struct PreviousRun;

// Where and how the desktop viewer exports a recorded path (Run::export_path).
struct PathExport {
  std::string folder;  // the folder the user typed
  bool video = false;  // also path.mp4
  int fps = 30;
  bool force = false;  // the viewer's --force: a user's file at one of the export's names is replaced
  // True for a file this viewer session wrote and nobody changed since (session/typed_outputs.h): its path.mp4,
  // which carries no mark of lact's, is replaced without force only then. Empty: no such file.
  std::function<bool(const std::string& path)> session_wrote;
  // The world the frames are in (the viewer session's --normalize-poses or state), recorded in path.json so that
  // `lact render --path` refuses it in another; none: path.json records no world (read as raw coordinates).
  std::optional<PathFrame> world;
};

class Run {
 public:
  // Starts the ranks --distributed asks for, agreeing on `command_line`; runs `before_work` on every rank (the
  // checks of flags and named outputs before any work: a failure on one rank stops every rank with one line);
  // then makes each rank's backend (its own GPU under nccl).
  Run(const CommonOptions& common, const OutputOptions& out, const RunDigest& command_line,
      const std::function<void(RunOutput&)>& before_work = {});
  // One process with nothing to agree on (the viewer, the Python module).
  explicit Run(const CommonOptions& common, const OutputOptions& out = {});
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  // Held by whoever uses this Run from a worker thread (an encode job, a render thread) while others may too:
  // `lact serve`'s scenes share one Run (one model, one device), used by one thread at a time. Timed, so that a
  // thread waiting for it can give up when it is told to stop (a released scene's render thread).
  std::timed_mutex& exclusive() { return exclusive_; }

  // This process prints and writes the shared files (the state, the report, a path's frames): rank 0.
  bool leads() const { return distribution().leads(); }
  int ranks() const { return distribution().size(); }
  bool distributed() const { return distribution().active(); }  // --distributed (even as one rank)
  Backend& backend() { return *backend_.backend; }
  RunOutput& output() { return out_; }
  // Runs `step` on every rank; a failure on any rank fails every rank with one line.
  void on_every_rank(const std::function<void()>& step) const;
  // Makes --out and locks it for the job (the lead rank; the others share its claim), before any work.
  void claim_output();

  // Loads the model on every rank (the path recorded as an input); later calls replace it.
  const Model& load_model(const std::string& path);
  const Model& model() const;
  // The loaded model's progress callback (Model::WorkProgress), in place of a command's stage bars: the Python
  // module checks for Ctrl-C between render batches through it.
  void set_model_progress(Model::WorkProgress progress);
  // The loaded model's render layer check (Model::RenderLayerCheck): the Python module's Ctrl-C between layers.
  void set_model_render_layer_check(Model::RenderLayerCheck check);
  const std::string& model_path() const { return model_path_; }  // empty: none loaded
  // Fills --size and --inputs from what the model was trained with where not given; Error(where, message) when
  // there are still no input views.
  void require_inputs(DataOptions& data, const std::string& where, const std::string& message);
  // One scene of `data` (--scene, or its only one): its views at the working size, its files recorded as
  // inputs. The ranks agree on it (and on the model). The guard rails' warnings on it are printed.
  SceneSelection select(const DataOptions& data);
  // Encodes the selection's input views (agreed by select()): memory checked once, each rank reading and
  // encoding its share; every rank returns the whole state.
  SceneState encode(const SceneSelection& selection);
  // A file the user named with `flag` (check_named_output against the run's inputs), on every rank.
  void check_output(const std::string& path, const std::string& flag, bool force);
  // Saves the state to `path` (the lead writes it; the other ranks hold the same state).
  void save_state(const std::string& path, const SceneState& state, const std::map<std::string, std::string>& metadata,
                  StoredDtype dtype);
  // Renders one camera at height x width (the camera's intrinsics scaled to it): no files, no ranks; memory
  // checked once for each size. Throws Error for a size the patch does not divide. Not for two threads at once.
  Image render(const SceneState& state, const Camera& camera, int height, int width);
  // Views already in memory (the Python module's arrays), encoded by this one process: memory checked once,
  // naming `flag`. `observer` sees the layers' outputs (core/model.h; it may throw to stop between layers).
  SceneState encode_views(const std::vector<PosedImage>& views, const std::string& flag,
                          const Model::Observer& observer = {});
  // Cameras at their own sizes, rendered in the batches `lact render` makes (so the same numbers): memory
  // checked once for each size, naming `flag`. Not for two threads at once.
  std::vector<Image> render_cameras(const SceneState& state, const std::vector<Camera>& cameras,
                                    const std::string& flag);
  // The Python module's arrays: views whose pixels the caller holds (read in place: core/pixel_view.h), and
  // cameras rendered into `out` (Model::render_into), as encode_views and render_cameras, but the memory of the
  // whole call checked at once (check_render_call). Two threads may render_cameras_into at once where the backend
  // allows it (the CPU's).
  SceneState encode_views(const std::vector<Camera>& cameras, const PixelView& pixels, const std::string& flag,
                          const Model::Observer& observer = {});
  void render_cameras_into(const SceneState& state, const std::vector<Camera>& cameras, const std::string& flag,
                           float* out);

  // The targets of one scene (a saved state's, or --scene / the only one of --data) or of every scene of
  // --data, rendered and measured against their ground truth, images under --out: the report of the whole
  // run on every rank (its failed scenes listed). Across ranks the scenes are shared out, or one scene's
  // inputs are encoded by every rank together and its targets shared out.
  Report evaluate(SceneRequest request);
  // LPIPS weights for the views a viewer measures (its test views); Error naming the file when they are not
  // LPIPS weights. evaluate() opens its own from SceneRequest::lpips.
  void use_lpips(const std::string& path);
  const Lpips* lpips() const { return lpips_.get(); }
  // Writes report.json and report.csv (the lead) and prints the table and where it wrote when any scene
  // succeeded; then any failure is one error line (the failure itself when it is the only one), and under
  // --warnings error so is a warning.
  void write_report(const Report& report);
  // The camera path file `path` rendered from the request's state (or its inputs, encoded across the ranks)
  // to frames under --out and, with request.video, an MP4; the lead renders the frames.
  void render_path(SceneRequest request, const std::string& path);
  // The viewer's export: `frames` rendered from an encoded `state` into `where.folder` (locked while it writes) as
  // path.json and frames, with `where.video` also path.mp4; the frames' memory checked as a path's is. Before any
  // work, a file at one of those names that is not lact's (output_ownership.h; path.json when a camera path as
  // lact writes it; path.mp4 when where.session_wrote it) is refused naming it, unless where.force. Returns the
  // folder's path.json.
  std::string export_path(const SceneState& state, const std::vector<Camera>& frames, const PathExport& where);

 private:
  const Distribution& distribution() const { return backend_.distribution; }
  void open_model(const std::string& path);
  void fill_inputs(DataOptions& data, const std::string& where, const std::string& message) const;
  // The memory check, the one place: all `need` allocates against what the backend and the host may take. An
  // encode's chunk of views (all of them unless it must be streamed to fit) is kept for the encode that follows,
  // and printed when it is streamed.
  void check_memory(const MemoryNeed& need);
  // --scratch, or its default: where an encode that does not fit in memory keeps its residual stream.
  std::string scratch_dir() const;
  // Model::encode as the last encode check planned it: its chunk of views and, where it chose one, a scratch file
  // for the residual stream (gone when the encode returns).
  SceneState encode_as_planned(const std::vector<PosedImage>& views, const Model::Observer& observer,
                               Collective* collective);
  SceneState encode_as_planned(const std::vector<Camera>& cameras, const PixelView& pixels,
                               const Model::Observer& observer);
  std::unique_ptr<ScratchFile> encode_scratch() const;  // encode_as_planned's file (null: none planned)
  // The time check beside it (pipeline/run_time.cpp): `work` estimated; over a minute, one line on stderr (the
  // lead); over --max-seconds, an Error naming the flag. `what` prefixes the work's description (a scene's name).
  void check_time(const WorkSize& work, const std::string& what);
  // encode_views(): the memory of `views` views at height x width, once, naming `flag`.
  void check_views_memory(int64_t views, int height, int width, const std::string& flag);
  // render(), render_cameras(): one view at height x width, checked the first time that size is rendered.
  void check_render_size(int height, int width, const std::string& flag);
  // render_cameras_into(): the whole call (its cameras' sizes in order, its images returned together, as a camera
  // path's call), checked the first time a call of those sizes is made.
  void check_render_call(const std::vector<Camera>& cameras, const std::string& flag);
  // This rank's `share` of the selection's input views (their memory checked with the work's).
  std::vector<PosedImage> read_inputs(const SceneSelection& selection, std::pair<size_t, size_t> share,
                                      const Distribution& across) const;
  struct Opened {
    SceneState state;
    SceneSelection selection;
  };
  Opened open_state(SceneRequest& request, bool with_scene);
  void open_model_for_inputs(SceneRequest& request);
  // One scene's work on this rank, planned and its memory checked before any of it runs.
  struct SceneWork {
    SceneReport report;
    std::vector<int> targets;            // this rank's share of report.targets
    std::pair<size_t, size_t> inputs{};  // this rank's share of the input views (when it encodes)
  };
  SceneWork plan_scene_work(const SceneSelection& selection, bool encodes, const SceneRequest& request,
                            const Distribution& across);
  // A scene's views as this rank writes them alone: those an interrupted run finished (--resume: not rendered
  // again), and after each batch the scene's report so far (its views written until then).
  struct SceneProgress {
    std::vector<ViewReport> done;
    std::function<void(const SceneReport& so_far)> after_batch;
  };
  SceneReport run_scene_work(SceneWork work, const SceneSelection& selection, const SceneState* state,
                             const Distribution& across, const SceneProgress& progress = {});
  Report evaluate_scenes(const SceneRequest& request);
  void evaluate_alone(const SceneRequest& request, const Scene& scene, size_t scenes, Report& report,
                      const SceneProgress& progress = {});
  // An evaluation's progress kept in report.json (across ranks, each rank's record) after each scene and each
  // batch of views (pipeline/resume.h).
  struct KeptProgress {
    bool active = false;
    std::string digest, record, report_path;  // the record's name in --out (progress_record_name), its path
    std::map<std::string, SceneReport> done;  // --resume: the interrupted run's finished scenes, by folder
    std::optional<SceneReport> partial;       // --resume: the scene it was in, with the views it finished
    size_t begin = 0, end = 0;                // this rank's share of the scenes
    // Takes `scene`'s report over from the interrupted run when it finished there.
    bool carry_over(const Scene& scene, OutputFolder& folder, Report& report);
  };
  // `shared`: one scene whose views every rank shares (each rank records its own views of it), else each rank
  // its share of `scenes`.
  KeptProgress start_kept_progress(const SceneRequest& request, const std::vector<const Scene*>& scenes, Report& report,
                                   bool shared = false);
  // --resume: whether this rank takes its record over (check_resumable), agreed by every rank: across ranks, one
  // without a record of its own (interrupted before it finished anything) starts its share afresh while another
  // rank of the same launch has one; every rank refuses when none has.
  bool takes_record_over(const std::string& digest, const std::string& record_path);
  // The progress of scene `i` of `scenes`: its views kept by an interrupted run, each batch recorded.
  SceneProgress scene_progress(KeptProgress& kept, const std::vector<const Scene*>& scenes, size_t i,
                               const Report& report);
  // The record rewritten incomplete: `report`'s scenes done, scenes from `next` on pending, and with `partial`
  // scene `next` under way with its views so far.
  void keep_progress(const KeptProgress& kept, const std::vector<const Scene*>& scenes, size_t next,
                     const Report& report, const SceneReport* partial = nullptr);
  // What a previous run left in --out: read before any work (refusing --resume where it cannot apply), and its
  // images and report removed just before this run writes its first image (at once across ranks, before any
  // work) unless resumed.
  void read_previous_run_of(const SceneRequest& request);
  std::string rank_prefix() const;  // "rank 1 of 2: " across ranks, for the lines each rank says of its own work
  std::string rank_note(std::string note) const;  // "lact: rank 1 of 2: ..." from "lact: ..." across ranks
  void clear_previous_run();
  Report evaluate_state(SceneRequest& request);
  Report evaluate_one_scene(const SceneRequest& request, const Scene& scene);
  // One scene whose targets every rank shares (in one process: a state's), encoded from its inputs or rendered
  // from `state`, its progress kept after each batch for --resume; `report` holds the header.
  Report evaluate_kept_scene(const SceneRequest& request, const SceneSelection& selection, const SceneState* state,
                             Report report);
  nlohmann::json report_header(const SceneRequest& request, int height, int width) const;
  // The guard rails (pipeline/guard_rails.h) on a selection before its work: its warnings, printed when `print`;
  // under --warnings error the first one is an Error.
  std::vector<std::string> check_guard_rails(const SceneSelection& selection, bool print) const;
  void say_warnings(const std::vector<std::string>& warnings, bool print) const;
  // After the render: each scene scoring below copying the nearest input gets a warning (printed by the lead).
  void check_baselines(Report& report) const;
  // The lead's line before a scene's work: its working size and why, its input views and why, the `work` (its
  // targets, a path's frames) and the `folder` it writes to.
  void announce(const SceneSelection& selection, const std::string& work, const std::string& folder,
                const SceneRequest& request) const;
  // Several scenes: one line for all (how each is sized, its inputs, where they write).
  void announce_scenes(size_t scenes, const SceneRequest& request) const;

  CommonOptions common_;
  RunDigest command_line_;  // the command as given (a command's run): what --resume compares
  RunOutput out_;
  // read_previous_run_of (the lead; resumed across ranks, each rank its record); gone once cleared or resumed
  std::unique_ptr<PreviousRun> previous_run_;
  std::string rank_record_;  // across ranks: this rank's progress record, removed once the report is written
  RunBackend backend_;
  std::unique_ptr<Model> model_;                       // after backend_: destroyed before it
  std::unique_ptr<Lpips> lpips_;                       // evaluate with --lpips; likewise after backend_
  bool lpips_by_default_ = false;                      // SceneRequest::lpips_by_default
  const Lpips* lpips_at(int height, int width) const;  // lpips_, unless the size is too small for a default
  std::string model_path_;
  std::timed_mutex exclusive_;
  std::set<std::pair<int, int>> rendered_sizes_;  // render(): sizes whose memory was checked
  // render_cameras_into(): calls whose memory was checked, each as its runs of one size (height, width, cameras)
  std::set<std::vector<std::tuple<int, int, size_t>>> rendered_calls_;
  bool stage_bars_ = false;                          // a command's run: bars for encode layers and rendered views
  Model::WorkProgress stage_bars_progress_;          // those bars (empty: none shown)
  RateCache rate_cache_{RateCache::default_path()};  // the product rates time estimates read (check_time)
  std::mutex rendered_sizes_lock_;                   // renders from two threads at once (render_cameras_into)
  WarningMode warnings_ = WarningMode::On;           // --warnings
  int64_t encode_chunk_views_ = 0;                   // the last encode check's chunk (Model::encode's chunk_views)
  int64_t encode_spill_bytes_ = 0;                   // and its residual stream's scratch file (0: in memory)
};

}  // namespace lact
