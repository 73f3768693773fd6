// Run::evaluate: a saved state's scene, one scene of --data or every scene of it, rendered and measured; how
// the scenes and the targets are shared across ranks and the ranks' reports merged.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <tuple>

#include "core/metrics.h"
#include "core/scene_state_io.h"
#include "datasets/view_selection.h"
#include "pipeline/output_ownership.h"
#include "pipeline/progress.h"
#include "pipeline/resume.h"
#include "pipeline/run.h"
#include "pipeline/run_work.h"
#include "pipeline/stage_progress.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/signal_cleanup.h"
#include "system/terminal_text.h"

namespace lact {

namespace {

// Every rank's measured views, in rank order (each rank's are consecutive targets).
std::vector<ViewReport> gather_views(const Distribution& d, const SceneReport& scene, std::vector<ViewReport> mine) {
  if (!d.active()) return mine;
  SceneReport part = scene;
  part.views = std::move(mine);
  Report report;
  report.scenes.push_back(std::move(part));
  std::vector<ViewReport> all;
  for (const SceneReport& s : merge_reports(d, report).scenes) all.insert(all.end(), s.views.begin(), s.views.end());
  return all;
}

// Before any work: the targets are scored with SSIM, whose window needs more than 10x10 pixels.
void check_scored_size(int height, int width, int patch) {
  if (height >= kSsimSmallestSide && width >= kSsimSmallestSide) return;
  const int smallest = (kSsimSmallestSide + patch - 1) / patch * patch;
  throw Error("--size", std::to_string(height) + "x" + std::to_string(width) + " is too small to score: SSIM's " +
                            "11x11 window needs at least " + std::to_string(kSsimSmallestSide) + " pixels a side (" +
                            std::to_string(smallest) + "x" + std::to_string(smallest) + " with patch " +
                            std::to_string(patch) + ")");
}

// A target that is also an input scores a view the model saw (the nearest-input column is its own photo): no
// novel view. Refused unless --allow-input-targets says it is meant.
void refuse_input_targets(const std::vector<int>& targets, const std::vector<int>& inputs, const SceneRequest& r) {
  const std::string whose = !r.state.empty()      ? " of the state"
                            : r.data.model_inputs ? " (the model's default " + r.data.inputs + "; give --inputs)"
                                                  : "";
  for (int t : targets)
    if (std::find(inputs.begin(), inputs.end(), t) != inputs.end())
      throw Error("--targets", "view " + std::to_string(t) + " is also an input" + whose +
                                   ": its score would not be of a novel view (--allow-input-targets if that is meant)");
}

// Before any work: LPIPS's poolings need images of the backbone's smallest side (AlexNet 31, VGG16 16).
void check_lpips_size(const Lpips& lpips, int height, int width) {
  const int side = lpips.smallest_side();
  if (height >= side && width >= side) return;
  throw Error("--size", std::to_string(height) + "x" + std::to_string(width) +
                            " is too small for --lpips: " + "LPIPS's " + lpips.network().name + " needs at least " +
                            std::to_string(side) + " pixels a side");
}

// " (and 17 of 56 views of scene 'x')": what --resume takes over of the scene an interrupted run was in.
std::string partial_text(const std::optional<SceneReport>& partial) {
  if (!partial || partial->views.empty()) return "";
  return " (and " + std::to_string(partial->views.size()) + " of " + std::to_string(partial->targets.size()) +
         " views of scene '" + terminal_text(partial->name) + "')";
}

// True on every rank when `mine` holds on every rank.
bool every_rank_holds(const Distribution& d, bool mine) {
  if (!d.active()) return mine;
  bool all = true;
  for (const std::string& theirs : d.ranks->all_gather_text(mine ? "1" : "0")) all = all && theirs == "1";
  return all;
}

// `done` without the views outside `targets` (this rank's share of a scene every rank renders a part of).
std::vector<ViewReport> views_among(std::vector<ViewReport> done, const std::vector<int>& targets) {
  const auto outside = [&](const ViewReport& v) {
    return std::find(targets.begin(), targets.end(), v.index) == targets.end();
  };
  done.erase(std::remove_if(done.begin(), done.end(), outside), done.end());
  return done;
}

std::string targets_text(const SceneReport& report) {
  return std::to_string(report.targets.size()) + (report.targets.size() == 1 ? " target" : " targets");
}

}  // namespace

nlohmann::json Run::report_header(const SceneRequest& r, int height, int width) const {
  nlohmann::json header = {{"model", r.model},
                           {"config", model().config().source},
                           {"data", r.data.data},
                           {"size", {height, width}},
                           {"views", {{"inputs", r.data.inputs}, {"targets", r.targets}}},
                           {"backend", common_.backend}};
  if (lpips_) header["lpips_net"] = lpips_->network().flag_name;  // alex or vgg: eval-compare warns across them
  // The model file's content identity: eval-compare tells one model given by two paths from two models.
  if (!model().weights().identity.empty()) header["model_identity"] = model().weights().identity;
  return header;
}

Run::SceneWork Run::plan_scene_work(const SceneSelection& selection, bool encodes, const SceneRequest& r,
                                    const Distribution& across) {
  SceneWork work;
  SceneReport& report = work.report;
  report.name = selection.scene.name;
  report.folder = out_.folder.scene_folder(selection.scene.name);
  report.inputs = selection.inputs;
  report.height = selection.height, report.width = selection.width;
  lact::on_every_rank(across, [&] {
    report.targets = select_views(r.targets, selection.scene, true, selection.inputs, r.data.seed, "--targets");
    if (!r.allow_input_targets) refuse_input_targets(report.targets, selection.inputs, r);
    check_ours_to_replace(out_, view_output_names(report.folder, report.targets, out_.options));
    report.warnings = check_guard_rails(selection, across.leads());
  });
  add_scene_inputs(selection, out_.inputs);
  // Each rank renders and measures its share of the targets (the state is the same on every rank).
  // Absolute: one photo, one name however --data was spelled (a resumed run's views and the first run's agree).
  for (int t : report.targets) report.target_images.push_back(absolute_path(selection.scene.views.at(t).image_path));
  const auto [begin, end] = share_of(across, report.targets.size());
  work.targets.assign(report.targets.begin() + begin, report.targets.begin() + end);
  // The scene's memory, checked once: the encode of this rank's inputs (or one rendered view from a state),
  // reading them, the targets, and the inputs the nearest-input baseline reads besides.
  lact::on_every_rank(across, [&] {
    MemoryNeed need;
    if (encodes) {
      work.inputs = input_share(selection, across);
      need = encode_need(selection, work.inputs);
    } else {
      need.height = selection.height, need.width = selection.width, need.scene = &selection.scene;
    }
    // The targets, rendered in batches of up to a token tile (memory_check.h): after the encode, on its own peak.
    need.render_sizes = {{selection.height, selection.width}};
    need.render_views = static_cast<int64_t>(work.targets.size());
    need.reads.push_back(work.targets);
    const size_t loaded = work.inputs.second - work.inputs.first;
    // Kept through the renders: the inputs read for the encode (the nearest-input baseline reads them in place)
    // and the nearest inputs that baseline reads besides.
    need.render_kept_views = static_cast<int64_t>(loaded);
    for (int view : nearest_inputs_to_read(selection, work.targets, work.inputs.first, loaded)) {
      need.reads.push_back({view});
      ++need.render_kept_views;
    }
    check_memory(need);
    check_scored_size(selection.height, selection.width,
                      model().config().patch_size);  // after memory: a huge size is named for that
    if (lpips_ && !lpips_by_default_) check_lpips_size(*lpips_, selection.height, selection.width);
    WorkSize time = encode_work(selection, work.inputs);  // no views to encode from a state
    time.renders.push_back({selection.height, selection.width, static_cast<int64_t>(work.targets.size())});
    check_time(time, "scene '" + selection.scene.name + "': ");
  });
  return work;
}

void Run::use_lpips(const std::string& path) { lpips_ = std::make_unique<Lpips>(path, backend()); }

const Lpips* Run::lpips_at(int height, int width) const {
  if (!lpips_ || (height >= lpips_->smallest_side() && width >= lpips_->smallest_side())) return lpips_.get();
  if (leads() && !out_.options.quiet)
    std::fprintf(stderr, "lact: LPIPS not measured at %dx%d (its %s needs %d pixels a side)\n", height, width,
                 lpips_->network().name, lpips_->smallest_side());
  return nullptr;
}

SceneReport Run::run_scene_work(SceneWork work, const SceneSelection& selection, const SceneState* given,
                                const Distribution& across, const SceneProgress& progress) {
  SceneReport& report = work.report;
  SceneState encoded;
  std::vector<PosedImage> inputs;  // this rank's share of the input views, when it encodes
  // Every view kept by an interrupted run (it stopped before its report): nothing to render, nothing to encode;
  // across ranks only when that holds on every rank, since they encode together.
  const bool all_kept = every_rank_holds(across, !progress.done.empty() && progress.done.size() == work.targets.size());
  if (!given && !all_kept) {
    inputs = read_inputs(selection, work.inputs, across);
    const auto start = std::chrono::steady_clock::now();
    encoded = encode_as_planned(inputs, {}, across.collective);
    report.encode_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const SceneState& state = given ? *given : encoded;
  std::vector<ViewReport> views;
  RenderTime time;
  ViewsKept kept;
  kept.done = progress.done;
  // The previous run's report and images stay until this scene's first image is written: a Ctrl-C during a
  // long first scene (its encode, its first batch of targets) leaves them as they were.
  kept.before_writing = [this] {
    if (!distributed()) clear_previous_run();
  };
  if (progress.after_batch)
    kept.after_batch = [&](const std::vector<ViewReport>& so_far) {
      SceneReport partial = report;
      partial.views = so_far;
      partial.render_ms_per_view = 1000.0 * time.seconds / std::max<size_t>(1, time.views);
      progress.after_batch(partial);
    };
  if (stage_bars_progress_)  // the batches' bars as one
    model_->set_progress(batched_render_progress(stage_bars_progress_, work.targets.size() - progress.done.size()));
  lact::on_every_rank(across, [&] {
    views = render_and_measure(model(), selection, state, work.targets, inputs, work.inputs.first, report.folder, out_,
                               time, lpips_at(selection.height, selection.width), kept);
  });
  report.render_ms_per_view = 1000.0 * time.seconds / std::max<size_t>(1, time.views);
  report.views = gather_views(across, report, std::move(views));
  return std::move(report);
}

void Run::clear_previous_run() {
  if (!previous_run_ || !leads()) return;
  const PreviousRun previous = std::move(*previous_run_);
  previous_run_.reset();
  // No report or record of lact's: nothing of it is known to be lact's.
  if (!previous.found && previous.records.empty()) return;
  // Never a report naming removed images: Ctrl-C or kill meanwhile lands when both are gone, and the report goes
  // first (kill -9 meanwhile may leave some previous images, no report claiming them).
  const SignalsHeld held;
  for (const char* name : {"report.json", "report.csv"}) ::unlink(out_.folder.file(name, out_.inputs).c_str());
  for (const std::string& record : previous.records) ::unlink(record.c_str());
  remove_previous_images(previous, out_);
}

// Before any work: what a previous run left in --out, kept for --resume or removed before the first scene's work
// (at once across ranks, whose scenes start at different times). Resumed across ranks, each rank reads its own
// record (progress_record_name).
void Run::read_previous_run_of(const SceneRequest& r) {
  on_every_rank([&] {
    const std::string record = progress_record_name(distributed(), distribution().rank(), ranks());
    if (leads() || r.resume)
      previous_run_ = std::make_unique<PreviousRun>(read_previous_run(out_, r.resume ? record : "report.json"));
    if (!r.resume && distributed()) clear_previous_run();
  });
}

Report Run::evaluate(SceneRequest r) {
  read_previous_run_of(r);
  if (!r.lpips.empty())  // its weights read and checked before any work
    on_every_rank([&] { lpips_ = std::make_unique<Lpips>(r.lpips, backend()); });
  lpips_by_default_ = r.lpips_by_default;
  Report report;
  if (r.state.empty()) {
    open_model_for_inputs(r);
    report = evaluate_scenes(r);
  } else {
    report = evaluate_state(r);
  }
  check_baselines(report);
  return report;
}

Report Run::evaluate_state(SceneRequest& r) {
  Opened opened = open_state(r, true);
  RunInputs read;
  read.model_path = r.model, read.model = &model(), read.state_path = r.state, read.lpips_path = r.lpips;
  read.selection = &opened.selection, read.targets_spec = r.targets, read.seed = r.data.seed;
  agree_on_inputs(distribution(), read);
  Report report;
  report.header = report_header(r, opened.selection.height, opened.selection.width);
  return evaluate_kept_scene(r, opened.selection, &opened.state, std::move(report));
}

// One scene, its input views encoded across the ranks and its targets shared out; any failure stops every rank.
Report Run::evaluate_one_scene(const SceneRequest& r, const Scene& scene) {
  Report report;
  SceneSelection selection;
  on_every_rank([&] {
    selection = plan_scene(scene, r.data, model().config().patch_size, r.targets);
    report.header = report_header(r, selection.height, selection.width);
  });
  RunInputs read;
  read.selection = &selection, read.targets_spec = r.targets, read.seed = r.data.seed;
  agree_on_inputs(distribution(), read);
  return evaluate_kept_scene(r, selection, nullptr, std::move(report));
}

// Each rank keeps its own views in its own record after each batch (--resume takes them over: pipeline/resume.h).
Report Run::evaluate_kept_scene(const SceneRequest& r, const SceneSelection& selection, const SceneState* state,
                                Report report) {
  const std::vector<const Scene*> scenes = {&selection.scene};
  KeptProgress kept = start_kept_progress(r, scenes, report, true);
  SceneProgress progress = scene_progress(kept, scenes, 0, report);  // before the scene's folder is taken
  SceneWork work = plan_scene_work(selection, state == nullptr, r, distribution());
  progress.done = views_among(std::move(progress.done), work.targets);
  if (r.resume && !out_.options.quiet)
    std::fprintf(stderr, "%sresuming scene '%s': %zu of %s%zu views were finished, %zu to go\n", rank_prefix().c_str(),
                 terminal_text(selection.scene.name).c_str(), progress.done.size(),
                 distributed() ? "this rank's " : "its ", work.targets.size(),
                 work.targets.size() - progress.done.size());
  announce(selection, targets_text(work.report), out_.folder.root() + "/" + work.report.folder, r);
  report.scenes.push_back(run_scene_work(std::move(work), selection, state, distribution(), progress));
  return report;
}

// Every scene of --data (or the one --scene names); a scene that fails is reported and the others go on.
// Across ranks, several scenes are shared out (each rank evaluates its own alone) and one scene is evaluated
// by every rank together.
Report Run::evaluate_scenes(const SceneRequest& r) {
  SceneList list;
  on_every_rank([&] {
    if (r.data.data.empty()) throw Error("--data", "no data given");
    list = read_scene_list(r.data.data, read_options(r.data));
  });
  RunInputs read;
  read.model_path = r.model, read.model = &model(), read.scenes = &list, read.lpips_path = r.lpips;
  agree_on_inputs(distribution(), read);
  Report report;
  std::vector<const Scene*> scenes;
  for (const Scene& s : list.scenes)
    if (r.data.scene.empty() || s.name == r.data.scene) scenes.push_back(&s);
  if ((r.data.scene.empty() || scenes.empty()) && leads())
    report.failed = list.failed;  // --scene found: others don't matter
  on_every_rank([&] {
    if (scenes.empty() && list.failed.empty()) throw Error(r.data.data, "has no scene named '" + r.data.scene + "'");
  });
  if (distribution().active() && scenes.size() == 1 && list.failed.empty()) return evaluate_one_scene(r, *scenes[0]);
  if (scenes.size() > 1) announce_scenes(scenes.size(), r);
  KeptProgress kept = start_kept_progress(r, scenes, report);
  Progress progress("scenes", static_cast<int>(kept.end - kept.begin), out_.options.quiet || !leads());
  for (size_t i = kept.begin; i < kept.end; ++i) {
    if (!kept.carry_over(*scenes[i], out_.folder, report))
      evaluate_alone(r, *scenes[i], scenes.size(), report, scene_progress(kept, scenes, i, report));
    progress.step(scenes[i]->name);
    keep_progress(kept, scenes, i + 1, report);
  }
  report = merge_reports(distribution(), report);
  if (report.header.is_null()) report.header = report_header(r, 0, 0);
  return report;
}

// One scene of several (or the only one) on this rank alone; a failure is reported and the others go on.
void Run::evaluate_alone(const SceneRequest& r, const Scene& scene, size_t scenes, Report& report,
                         const SceneProgress& progress) {
  const Distribution alone;
  try {
    const SceneSelection selection = plan_scene(scene, r.data, model().config().patch_size, r.targets);
    SceneWork work = plan_scene_work(selection, true, r, alone);
    if (scenes == 1) announce(selection, targets_text(work.report), out_.folder.root() + "/" + work.report.folder, r);
    if (report.header.is_null()) report.header = report_header(r, selection.height, selection.width);
    report.scenes.push_back(run_scene_work(std::move(work), selection, nullptr, alone, progress));
  } catch (const Error& e) {
    report.failed.push_back({scene.name, e.what()});
  }
}

bool Run::KeptProgress::carry_over(const Scene& scene, OutputFolder& folder, Report& report) {
  if (done.empty()) return false;
  const auto found = done.find(folder.next_scene_folders({scene.name})[0]);
  if (found == done.end()) return false;
  folder.scene_folder(scene.name);  // taken, as the interrupted run took it
  report.scenes.push_back(std::move(found->second));
  done.erase(found);
  return true;
}

// The evaluation's progress is kept after each scene and batch of views (pipeline/resume.h): in report.json, or
// across ranks (each evaluating its own share of the scenes) in each rank's own record; with --resume, the
// interrupted run's finished scenes and views are taken over.
Run::KeptProgress Run::start_kept_progress(const SceneRequest& r, const std::vector<const Scene*>& scenes,
                                           Report& report, bool shared) {
  KeptProgress kept;
  kept.active = true;
  std::tie(kept.begin, kept.end) = shared ? std::pair<size_t, size_t>(0, 1) : share_of(distribution(), scenes.size());
  kept.digest = resume_digest(command_line_, r.model, r.lpips, scenes, distributed() ? ranks() : 0, r.state);
  kept.record = progress_record_name(distributed(), distribution().rank(), ranks());
  kept.report_path = out_.folder.root() + "/" + kept.record;
  if (distributed()) rank_record_ = kept.report_path;
  if (r.resume && takes_record_over(kept.digest, kept.report_path)) {
    for (SceneReport& scene : previous_run_->done) kept.done.emplace(scene.folder, std::move(scene));
    kept.partial = std::move(previous_run_->partial);
    report.header = previous_run_->header;
  }
  if (r.resume) {
    previous_run_.reset();  // kept: nothing of it is removed
    if (!out_.options.quiet && !shared)
      std::fprintf(stderr, "%sresuming: %zu of %zu scenes were finished, %zu to go%s\n", rank_prefix().c_str(),
                   kept.done.size(), kept.end - kept.begin, kept.end - kept.begin - kept.done.size(),
                   partial_text(kept.partial).c_str());
  }
  set_interrupt_note(rank_note(interrupted_note(kept.done.size(), kept.end - kept.begin, kept.report_path,
                                                kept.partial ? &*kept.partial : nullptr)));
  return kept;
}

bool Run::takes_record_over(const std::string& digest, const std::string& record_path) {
  const bool mine = previous_run_->found;
  const bool none = every_rank_holds(distribution(), !mine);
  on_every_rank([&] {
    if (mine || none) check_resumable(*previous_run_, digest, record_path);
  });
  return mine;
}

std::string Run::rank_prefix() const {
  return distributed() ? "rank " + std::to_string(distribution().rank()) + " of " + std::to_string(ranks()) + ": " : "";
}

std::string Run::rank_note(std::string note) const {
  const std::string lact = "lact: ";
  if (note.rfind(lact, 0) == 0) note.insert(lact.size(), rank_prefix());
  return note;
}

Run::SceneProgress Run::scene_progress(KeptProgress& kept, const std::vector<const Scene*>& scenes, size_t i,
                                       const Report& report) {
  SceneProgress progress;
  if (!kept.active) return progress;
  if (kept.partial && kept.partial->folder == out_.folder.next_scene_folders({scenes[i]->name})[0]) {
    progress.done = views_in_place(*kept.partial, out_);
    kept.partial.reset();
  }
  progress.after_batch = [this, &kept, &scenes, i, &report](const SceneReport& so_far) {
    keep_progress(kept, scenes, i, report, &so_far);
  };
  return progress;
}

void Run::keep_progress(const KeptProgress& kept, const std::vector<const Scene*>& scenes, size_t next,
                        const Report& report, const SceneReport* partial) {
  // The last scene: in one process the whole report comes next; across ranks the others may still work.
  if (!kept.active || (next >= kept.end && !distributed())) return;
  clear_previous_run();  // before this run's report replaces the previous one's
  Report record = report;
  record.complete = false;
  record.resume_digest = kept.digest;
  std::vector<std::string> names;
  for (size_t i = next + (partial ? 1 : 0); i < kept.end; ++i) names.push_back(scenes[i]->name);
  const std::vector<std::string> folders = out_.folder.next_scene_folders(names);
  if (partial) {  // its folder is taken already
    record.pending.emplace_back(scenes[next]->name, partial->folder);
    record.partial = *partial;
  }
  for (size_t i = 0; i < names.size(); ++i) record.pending.emplace_back(names[i], folders[i]);
  const SignalsHeld held;  // the report and the note that names it change together
  // Incomplete: the record alone is written (across ranks a rank's own, never report.json).
  record.write(out_.folder.file(kept.record, out_.inputs), out_.folder.file("report.csv", out_.inputs));
  set_interrupt_note(rank_note(interrupted_note(next - kept.begin, kept.end - kept.begin, kept.report_path, partial)));
}

void Run::write_report(const Report& report) {
  on_every_rank([&] {
    if (report.scenes.empty() && report.failed.size() == 1) throw Error(report.failed[0].second);
    if (!report.scenes.empty() && leads()) {
      report.write(out_.folder.file("report.json", out_.inputs), out_.folder.file("report.csv", out_.inputs));
      report.print_table();
      std::printf("results -> %s (report.json, report.csv, a folder of images per scene)\n",
                  terminal_text(out_.folder.root()).c_str());
    }
  });
  {  // The report is written (every rank agreed above): the note on what was kept, and the ranks' records, go.
    const SignalsHeld held;
    if (!rank_record_.empty()) ::unlink(rank_record_.c_str());
    set_interrupt_note("");
  }
  on_every_rank([&] {
    if (warnings_ == WarningMode::Error)  // only the baseline's are left: the others refused before the work
      for (const SceneReport& scene : report.scenes)
        if (!scene.warnings.empty()) throw Error(scene.warnings[0] + " (refused: --warnings error)");
    if (!report.failed.empty())
      throw Error(std::to_string(report.failed.size()) + " of " +
                  std::to_string(report.failed.size() + report.scenes.size()) +
                  " scenes failed, the first: " + report.failed[0].second +
                  (report.scenes.empty() ? "" : " (see " + out_.folder.root() + "/report.json)"));
  });
}

}  // namespace lact
