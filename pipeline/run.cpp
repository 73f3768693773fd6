#include "pipeline/run.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/image_size.h"
#include "pipeline/env_switch.h"
#include "pipeline/resume.h"
#include "pipeline/run_work.h"
#include "pipeline/scratch_file.h"
#include "pipeline/stage_progress.h"
#include "system/error.h"
#include "system/host_memory.h"

namespace lact {

Run::Run(const CommonOptions& common, const OutputOptions& out, const RunDigest& command_line,
         const std::function<void(RunOutput&)>& before_work)
    : common_(common), command_line_(command_line), out_(out), warnings_(parse_warning_mode(out.warnings)) {
  // The first exchange of the job agrees on the command line; the backend comes after the checks, so that a
  // bad flag or output ends the run before any device is opened.
  const Distribution ranks = start_agreed_ranks(common, command_line);
  lact::on_every_rank(ranks, [&] {
    if (!common.scratch_dir.empty()) check_scratch_folder(common.scratch_dir);
    if (before_work) before_work(out_);
  });
  backend_ = start_run_backend(common);
  stage_bars_ = true;
}

Run::Run(const CommonOptions& common, const OutputOptions& out)
    : common_(common), out_(out), warnings_(parse_warning_mode(out.warnings)) {
  if (!common.scratch_dir.empty()) check_scratch_folder(common.scratch_dir);
  backend_ = start_run_backend(common);
}

Run::~Run() { model_.reset(); }  // before the backend it runs on

void Run::on_every_rank(const std::function<void()>& step) const { lact::on_every_rank(distribution(), step); }

void Run::claim_output() {
  on_every_rank([&] {
    if (leads()) out_.folder.claim(out_.options.force);  // held for the job; its other ranks share it
  });
}

const Model& Run::load_model(const std::string& path) {
  on_every_rank([&] { open_model(path); });
  return *model_;
}

void Run::open_model(const std::string& path) {
  out_.inputs.add(path);
  model_ = load_model_for(path, backend());
  model_path_ = path;
  if (stage_bars_) {
    stage_bars_progress_ = stage_progress_bars(out_.options.quiet || !leads());
    model_->set_progress(stage_bars_progress_);
  }
}

const Model& Run::model() const {
  if (!model_) throw Error("--model", "no model given");
  return *model_;
}

void Run::set_model_progress(Model::WorkProgress progress) {
  if (!model_) throw Error("--model", "no model given");
  model_->set_progress(std::move(progress));
}

void Run::set_model_render_layer_check(Model::RenderLayerCheck check) {
  if (!model_) throw Error("--model", "no model given");
  model_->set_render_layer_check(std::move(check));
}

void Run::fill_inputs(DataOptions& data, const std::string& where, const std::string& message) const {
  apply_model_defaults(data, model(), true);  // the model's trained size and input count when not given
  if (data.inputs.empty()) throw Error(where, message);
}

void Run::require_inputs(DataOptions& data, const std::string& where, const std::string& message) {
  on_every_rank([&] { fill_inputs(data, where, message); });
}

void Run::check_output(const std::string& path, const std::string& flag, bool force) {
  on_every_rank([&] { check_named_output(path, flag, force, out_.inputs); });
}

void Run::save_state(const std::string& path, const SceneState& state,
                     const std::map<std::string, std::string>& metadata, StoredDtype dtype) {
  on_every_rank([&] {
    if (leads()) save_scene_state(path, state, model().weights(), backend(), metadata, dtype);
  });
}

SceneSelection Run::select(const DataOptions& data) {
  SceneSelection selection;
  on_every_rank([&] {
    selection = select_scene_views(data, model().config().patch_size);
    add_scene_inputs(selection, out_.inputs);
  });
  RunInputs read;
  read.model_path = model_path_, read.model = &model(), read.selection = &selection;
  agree_on_inputs(distribution(), read);
  on_every_rank([&] { check_guard_rails(selection, leads()); });
  return selection;
}

std::string Run::scratch_dir() const {
  return common_.scratch_dir.empty() ? default_scratch_dir() : common_.scratch_dir;
}

std::unique_ptr<ScratchFile> Run::encode_scratch() const {
  return encode_spill_bytes_ > 0 ? std::make_unique<ScratchFile>(scratch_dir(), encode_spill_bytes_) : nullptr;
}

SceneState Run::encode_as_planned(const std::vector<PosedImage>& views, const Model::Observer& observer,
                                  Collective* collective) {
  const std::unique_ptr<ScratchFile> scratch = encode_scratch();
  return model().encode(views, observer, collective, encode_chunk_views_, scratch.get());
}

SceneState Run::encode_as_planned(const std::vector<Camera>& cameras, const PixelView& pixels,
                                  const Model::Observer& observer) {
  const std::unique_ptr<ScratchFile> scratch = encode_scratch();
  return model().encode(cameras, pixels, observer, nullptr, encode_chunk_views_, scratch.get());
}

namespace {
std::string memory_mib(int64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

// LACT_MEMORY_ESTIMATE=1's second line: the parts of an encode's or a render's estimate.
void print_memory_estimate_parts(const EncodeMemory& need) {
  std::fprintf(
      stderr, "lact: note: estimate parts: process %s, views %s, embedding %s, activations %s, scratch %s, state %s\n",
      memory_mib(need.process).c_str(), memory_mib(need.views).c_str(), memory_mib(need.embedding).c_str(),
      memory_mib(need.activations).c_str(), memory_mib(need.temporaries).c_str(), memory_mib(need.state).c_str());
}
}  // namespace

void Run::check_memory(const MemoryNeed& asked) {
  MemoryNeed need = asked;
  need.scratch_dir = scratch_dir();
  std::vector<EncodePlan> renders;
  const EncodePlan plan = check_memory_need(model(), need, &renders);
  const bool print_parts = diagnostic_switch("LACT_MEMORY_ESTIMATE");
  const auto mib = memory_mib;
  if (print_parts && !out_.options.quiet && leads())
    for (size_t i = 0; i < renders.size(); ++i) {
      std::fprintf(stderr, "lact: note: rendering %lld views at %dx%d at a time: peak estimate %s of %s (%s)\n",
                   static_cast<long long>(renders[i].views), need.render_sizes[i].first, need.render_sizes[i].second,
                   mib(renders[i].need.total()).c_str(),
                   renders[i].limit < 0 ? "no known limit" : mib(renders[i].limit).c_str(),
                   renders[i].limit_source.c_str());
      print_memory_estimate_parts(renders[i].need);
    }
  if (need.encode_views <= 0) return;
  encode_chunk_views_ = plan.chunk_views;
  encode_spill_bytes_ = plan.spill_bytes;
  const bool streamed = plan.chunk_views < plan.views;
  if (out_.options.quiet || !leads() || (!streamed && !print_parts)) return;
  const std::string spill = plan.spill_bytes > 0 ? ", the residual stream (" + mib(plan.spill_bytes) +
                                                       ") in a scratch file in " + need.scratch_dir + " (" +
                                                       memory_size_text(free_disk_bytes(need.scratch_dir)) + " free)"
                                                 : "";
  std::fprintf(stderr, "lact: note: encoding %lld views %s%lld at a time%s: peak estimate %s of %s (%s)\n",
               static_cast<long long>(plan.views), streamed ? "in chunks, " : "",
               static_cast<long long>(plan.chunk_views), spill.c_str(), mib(plan.need.total()).c_str(),
               plan.limit < 0 ? "no known limit" : mib(plan.limit).c_str(), plan.limit_source.c_str());
  if (print_parts) print_memory_estimate_parts(plan.need);
}

std::vector<PosedImage> Run::read_inputs(const SceneSelection& selection, std::pair<size_t, size_t> share,
                                         const Distribution& across) const {
  std::vector<PosedImage> mine;
  lact::on_every_rank(across, [&] {
    mine = read_checked_views(selection, input_share_views(selection, share));  // checked with the work
  });
  return mine;
}

SceneState Run::encode(const SceneSelection& selection) {
  std::pair<size_t, size_t> share;
  on_every_rank([&] {
    share = input_share(selection, distribution());
    check_memory(encode_need(selection, share));
    check_time(encode_work(selection, share), "");
  });
  return encode_as_planned(read_inputs(selection, share, distribution()), {}, distribution().collective);
}

Image Run::render(const SceneState& state, const Camera& camera, int height, int width) {
  const int patch = model().config().patch_size;
  if (height < 1 || width < 1 || height % patch || width % patch)
    throw Error("render", "size " + std::to_string(height) + "x" + std::to_string(width) +
                              " is not divisible by the patch size " + std::to_string(patch));
  check_render_size(height, width, "--size");
  return model().render(state, {camera_at_size(camera, height, width)}).at(0);
}

SceneState Run::encode_views(const std::vector<PosedImage>& views, const std::string& flag,
                             const Model::Observer& observer) {
  if (views.empty()) throw Error(flag, "no input views");
  check_views_memory(static_cast<int64_t>(views.size()), views[0].image.height, views[0].image.width, flag);
  return encode_as_planned(views, observer, nullptr);
}

SceneState Run::encode_views(const std::vector<Camera>& cameras, const PixelView& pixels, const std::string& flag,
                             const Model::Observer& observer) {
  if (cameras.empty() || pixels.count < 1) throw Error(flag, "no input views");
  check_views_memory(pixels.count, static_cast<int>(pixels.height), static_cast<int>(pixels.width), flag);
  return encode_as_planned(cameras, pixels, observer);
}

void Run::check_views_memory(int64_t views, int height, int width, const std::string& flag) {
  if (distributed()) throw Error(flag, "views held in memory are encoded by one process (no --distributed)");
  MemoryNeed need;
  need.height = height, need.width = width, need.flag = flag;
  need.encode_views = views;
  check_memory(need);
  const std::lock_guard<std::mutex> hold(rendered_sizes_lock_);
  rendered_calls_.clear();  // the state it makes was not held when those calls were checked
}

std::vector<Image> Run::render_cameras(const SceneState& state, const std::vector<Camera>& cameras,
                                       const std::string& flag) {
  for (const Camera& camera : cameras) check_render_size(camera.height, camera.width, flag);
  return model().render(state, cameras);
}

void Run::render_cameras_into(const SceneState& state, const std::vector<Camera>& cameras, const std::string& flag,
                              float* out) {
  check_render_call(cameras, flag);
  model().render_into(state, cameras, out);
}

void Run::check_render_call(const std::vector<Camera>& cameras, const std::string& flag) {
  std::vector<std::tuple<int, int, size_t>> call;
  for (const Camera& c : cameras)
    if (!call.empty() && std::get<0>(call.back()) == c.height && std::get<1>(call.back()) == c.width)
      ++std::get<2>(call.back());
    else
      call.emplace_back(c.height, c.width, 1);
  const std::lock_guard<std::mutex> hold(rendered_sizes_lock_);
  if (rendered_calls_.count(call)) return;
  // As a camera path's call of all these frames (add_frame_sizes): every batch at once, the call's images kept
  // together. The frames twice: a later call of the same sizes is not checked again, and renders on the blocks
  // this one's batches left held.
  MemoryNeed need;
  add_frame_sizes(cameras, flag, need);
  const std::vector<std::pair<int, int>> frames = need.path_frames;
  need.path_frames.insert(need.path_frames.end(), frames.begin(), frames.end());
  need.render_views = static_cast<int64_t>(cameras.size());
  need.render_flag = flag;
  check_memory(need);
  rendered_calls_.insert(std::move(call));
}

void Run::check_render_size(int height, int width, const std::string& flag) {
  const std::lock_guard<std::mutex> hold(rendered_sizes_lock_);
  if (rendered_sizes_.count({height, width})) return;
  MemoryNeed need;
  need.render_sizes = {{height, width}};
  need.render_flag = flag;
  need.render_repeats = true;  // checked once a size: every later call renders it again on the blocks held
  check_memory(need);
  rendered_sizes_.insert({height, width});
}

}  // namespace lact
