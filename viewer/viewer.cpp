// The viewer's frame loop: wires the window, the encode job, the render thread, the camera, the panels, the
// recorder and the script together. Each of those lives in its own file; this one only passes data between
// them, once per frame.
#include <imgui.h>
#include <imgui_internal.h>  // ErrorCheckEndFrameRecover: closes a frame an exception left open

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <new>
#include <thread>

#include "datasets/camera_path_io.h"
#include "pipeline/run.h"
#include "system/clock.h"
#include "system/error.h"
#include "viewer/camera_input.h"
#include "viewer/error_popup.h"
#include "viewer/frustums.h"
#include "viewer/options.h"
#include "viewer/panels.h"
#include "viewer/recorder_panel.h"
#include "viewer/screenshot.h"
#include "viewer/script.h"
#include "viewer/session_parts.h"
#include "viewer/texture.h"
#include "viewer/view_area.h"
#include "viewer/window.h"

namespace lact::viewer {

namespace {

constexpr float kPanelWidth = 340;
constexpr double kSettleSeconds = 0.3;  // adaptive resolution: full scale this long after the last move

// HxW like every size flag (a single N: NxN); returned as {width, height}, as the window takes it.
std::pair<int, int> parse_window_size(const std::string& text) {
  int w = 0, h = 0;
  char x = 0, extra = 0;
  const int read = std::sscanf(text.c_str(), "%d%c%d%c", &h, &x, &w, &extra);
  if (read == 1) w = h;
  if ((read != 1 && (read != 3 || (x != 'x' && x != 'X'))) || w < 400 || h < 300 || w > 16384 || h > 16384)
    throw Error("--window", "'" + text + "' is not a window size like 800x1280 (height x width, at least 300x400)");
  return {w, h};
}

// The scene view [ or ] goes to: the neighbour of the snapped one in `list`, or the nearest to the camera.
int step_view(const std::vector<int>& list, const SceneSource& source, const CameraController& camera, int direction) {
  if (list.empty()) return -1;
  const int current = camera.snapped_view();
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i] == current) return list[(i + list.size() + direction) % list.size()];
  std::vector<Camera> candidates;
  for (int v : list) candidates.push_back(source.cameras[v]);
  return list[nearest_camera(candidates, camera.camera())];
}

// The outcome of a camera path export, written by the render thread.
struct ExportOutcome {
  std::mutex mutex;
  bool done = false;
  std::string message;
  bool failed = false;
  std::string video;  // the path.mp4 written, which the window records as its own (TypedOutputs::wrote)
};

// `written`: a copy of the window's record of what it wrote, taken when export was pressed (the render thread
// reads it while the window goes on).
void export_path(Run& run, const SceneState& state, const std::vector<Camera>& frames, const PathExport& where,
                 const TypedOutputs& written, ExportOutcome& outcome) {
  std::string message, video;
  bool failed = false;
  PathExport request = where;
  request.session_wrote = [&written](const std::string& file) { return written.wrote_unchanged(file); };
  try {
    const std::string file = run.export_path(state, frames, request);
    if (where.video) video = (std::filesystem::path(file).parent_path() / "path.mp4").string();
    message = "exported " + std::to_string(frames.size()) + " frames to " + where.folder;
  } catch (const std::exception& e) {
    message = e.what();  // a user's file at one of the export's names: one line naming it
    failed = true;
  }
  std::lock_guard<std::mutex> lock(outcome.mutex);
  outcome.done = true;
  outcome.message = message;
  outcome.video = video;
  outcome.failed = failed;
}

// Seconds from the start of `lact view` to: the model and scene opened, the first frame, the first novel view.
struct StartupTimes {
  double start = 0, opened = -1, first_frame = -1, first_view = -1;
};

void print_stats(FrameStats& stats, double now, const SceneSource& source, const EncodeJob& encode,
                 const RenderedView* shown, const Script& script, int threads, const StartupTimes& startup) {
  std::printf("viewer.open_s %.3f\n", startup.opened);
  std::printf("viewer.first_frame_s %.3f\n", startup.first_frame);
  std::printf("viewer.first_view_s %.3f\n", startup.first_view);
  std::printf("viewer.encode_s %.6f\n", encode.encode_seconds());
  std::printf("viewer.render_threads %d\n", threads);
  std::printf("viewer.working_size %dx%d\n", source.height, source.width);
  if (shown) {
    std::printf("viewer.render_size %dx%d\n", shown->request.camera.height, shown->request.camera.width);
    std::printf("viewer.view %d\n", shown->request.view);
    if (shown->measured) {
      std::printf("viewer.view_role %s\n", source.role(shown->request.view));
      std::printf("viewer.psnr %.6f\n", shown->psnr);
      std::printf("viewer.ssim %.6f\n", shown->ssim);
      if (shown->nearest_input >= 0) {  // the Quality panel's baseline
        std::printf("viewer.nearest_input %d\n", shown->nearest_input);
        std::printf("viewer.psnr_nearest_input %.6f\n", shown->psnr_nearest_input);
      }
      if (shown->lpips) std::printf("viewer.lpips %.6f\n", *shown->lpips);
      if (shown->lpips_nearest_input) std::printf("viewer.lpips_nearest_input %.6f\n", *shown->lpips_nearest_input);
    }
  }
  std::printf("viewer.fps %.2f\n", stats.fps(now));
  std::printf("viewer.frame_ms %.3f\n", stats.frame_ms(now));
  std::printf("viewer.render_ms %.3f\n", stats.render_ms(now));
  std::printf("viewer.novel_views_per_s %.2f\n", stats.views_per_second(now));
  if (script.orbited()) {
    const IntervalTotals& t = stats.interval();
    std::printf("orbit.frames %ld\n", t.frames);
    std::printf("orbit.seconds %.4f\n", t.seconds());
    std::printf("orbit.ui_fps %.2f\n", t.frames_per_second());
    std::printf("orbit.novel_views %ld\n", t.views);
    std::printf("orbit.novel_views_per_s %.2f\n", t.views_per_second());
    std::printf("orbit.render_ms %.3f\n", t.mean_render_ms());
    std::printf("orbit.frame_ms %.3f\n", t.mean_frame_ms());
    std::printf("orbit.render_busy %.3f\n", t.render_busy());
    std::printf("orbit.smallest_render %dx%d\n", t.smallest_height, t.smallest_width);
  }
  std::fflush(stdout);
}

std::string tile_label(const char* what, const Texture& texture, int height, int width) {
  char text[160];
  if (texture.empty())
    std::snprintf(text, sizeof(text), "%s", what);
  else if (texture.width() == width && texture.height() == height)
    std::snprintf(text, sizeof(text), "%s  %dx%d", what, height, width);
  else
    std::snprintf(text, sizeof(text), "%s  %dx%d (rendered %dx%d)", what, height, width, texture.height(),
                  texture.width());
  return text;
}

// Everything the frame loop carries from one frame to the next, and the steps of one frame. The members are
// declared in the order they must be built (the window after the scene source has opened without error) and
// torn down (the render thread before the model and the window).
struct Viewer {
  Viewer(const ViewerOptions& options, SceneSource opened, std::pair<int, int> window_size);
  ~Viewer() { renderer.reset(); }
  bool frame();  // one UI frame; false when the loop should end
  // frame(), with std::bad_alloc from any of its actions shown in the error popup (a scripted run stops on it):
  // before, it escaped the UI thread's loop and the viewer aborted.
  bool frame_or_out_of_memory();

  const ViewerOptions& o;
  SceneSource source;
  TypedOutputs typed_outputs;     // what the screenshot and path file fields may name: never an input
  const PathFrame cameras_world;  // the frame camera path files saved here record, and loaded ones must match
  const int patch, threads;
  Window window;
  DisplaySettings display;
  CameraController camera;
  const std::vector<int> snap_list;
  EncodeJob encode;
  std::unique_ptr<RenderThread> renderer;
  Texture view_texture, truth_texture, error_texture;
  RenderedView shown;  // what is on screen (its pixels live in the textures)
  bool has_shown = false;
  uint64_t submitted = 0;
  RenderRequest last_request;
  Camera last_camera;
  double last_motion = -1e9;
  FrameStats stats;
  PathRecorder recorder;
  RecorderSettings recorder_settings;
  std::shared_ptr<ExportOutcome> export_outcome = std::make_shared<ExportOutcome>();
  ErrorPopup errors;
  Script script;
  std::string screenshot_path, last_screenshot;
  std::string failure;      // a scripted run's error (exit code 1)
  std::string scene_error;  // the encode's
  int quiet_frames = 0;
  long frame_count = 0;
  StartupTimes startup;  // set by run_viewer and the first frames
  bool animating = false;
  float area_x = 0, area_y = 0, area_width = 0, area_height = 0;  // the view area beside the panel (ImGui units)
  PanelFit panel_fit;  // the side panel's content against its room, as last drawn
  const double refresh_rate;
  double previous_frame_end;

 private:
  // What a frame's input and panels asked for.
  struct Requests {
    InputActions input;
    PanelActions panels;
    RecorderActions recorder;
    bool dismiss_error = false;  // Enter or Esc while the error popup shows: closes its message (and never quits)
  };
  RenderRequest desired_request(double now) const;
  bool stop_on(const std::string& message);  // a scripted run stops at its first error; else shown
  void wait_for_events();
  bool take_results();  // the encode's outcome and a finished view; false: stop
  void take_export_outcome();
  ViewLayout layout_now();
  Requests input_and_panels(const ViewLayout& layout, double now, const EncodeJob::Progress& progress);
  void apply(const Requests& r, double now);
  void apply_recorder(const Requests& r, double now);
  void start_export();
  bool run_script(double now, bool& capture);  // true when the script finished this frame
  void submit_render(double now, bool camera_moving);
  void draw(const ViewLayout& layout, const EncodeJob::Progress& progress, bool dismiss_error);
  bool save_capture(const Rgb8& pixels, const ViewLayout& layout, bool finished);  // false: stop
  void pace(double frame_start);
};

Viewer::Viewer(const ViewerOptions& options, SceneSource opened, std::pair<int, int> window_size)
    : o(options),
      source(std::move(opened)),
      typed_outputs(session_inputs(source), o.force),
      cameras_world(cameras_frame(source)),
      patch(source.model->config().patch_size),
      threads(render_threads(o, source)),
      window(window_size.first, window_size.second, "lact view: " + source.selection.scene.name),
      camera(scene_frame(source.cameras), source.cameras[source.start_view(o.camera)], source.start_view(o.camera)),
      snap_list(source.snap_views()),
      encode(source, o.common.threads, &Window::wake),
      last_camera(camera.camera()),
      script(o),
      screenshot_path(o.screenshot.empty() ? next_screenshot_name() : o.screenshot),
      refresh_rate(window.refresh_rate()),
      previous_frame_end(now_seconds()) {
  display.scale = static_cast<float>(o.scale);
  display.adaptive = o.adaptive;
  display.moving_scale = static_cast<float>(o.moving_scale);
  display.vsync = !o.no_vsync;
  display.show_truth = o.show_truth;
  display.show_error = o.show_error;
  display.show_frustums = o.show_frustums;
  window.set_vsync(display.vsync);
}

// The current camera at the resolution scale (lower while moving, when adaptive).
RenderRequest Viewer::desired_request(double now) const {
  double scale = display.scale;
  if (display.adaptive && now - last_motion < kSettleSeconds) scale = std::min(scale, double(display.moving_scale));
  return RenderRequest{scaled_camera(camera.camera(), scale, patch), camera.snapped_view()};
}

bool Viewer::stop_on(const std::string& message) {
  if (script.active()) {
    failure = message;
    return true;
  }
  errors.show(message);
  return false;
}

// Redraw continuously while anything moves; otherwise sleep until input or a result (threads wake us). While
// encoding, wake for progress only (the encode needs the cores; spinning OpenMP threads suffer badly from a busy
// UI on the same cores).
void Viewer::wait_for_events() {
  const double before_wait = now_seconds();
  animating = script.active() || recorder.playing() || before_wait - last_motion < 2 * kSettleSeconds;
  if (!renderer && !encode.finished() && frame_count > 0) {
    window.wait_events(0.25);
  } else if (animating || quiet_frames < 2) {
    window.poll_events();
  } else {
    window.wait_events(0.5);
    quiet_frames = 0;
  }
  ++quiet_frames;
}

bool Viewer::take_results() {
  // The scene becomes renderable.
  if (!renderer && encode.finished() && scene_error.empty()) {
    if (!encode.error().empty()) {
      scene_error = encode.error();
      if (stop_on(scene_error)) return false;
    } else {
      renderer = std::make_unique<RenderThread>(
          *source.run, encode.state(), [this](int view) { return source.ground_truth(view); }, source.width,
          source.height, threads, [](int) { Window::wake(); }, [this](int view) { return source.nearest_input(view); });
    }
  }
  if (!renderer) return true;
  // A finished novel view: upload it.
  std::optional<RenderedView> result = renderer->take();
  if (!result) return true;
  if (!result->error.empty()) return !stop_on(result->error);
  if (!result->truth_error.empty()) {
    if (script.active()) return !stop_on(result->truth_error);
    errors.show("no PSNR/SSIM for view " + std::to_string(result->request.view) + ": " + result->truth_error);
  }
  const double upload_start = now_seconds();
  const bool exact = result->image.width == source.width && result->image.height == source.height;
  view_texture.upload(result->image, !exact);
  if (result->measured) {
    truth_texture.upload(result->truth, false);
    error_texture.upload(result->error_map, false);
  }
  stats.upload(now_seconds(), now_seconds() - upload_start);
  stats.view(now_seconds(), result->render_seconds, result->image.width, result->image.height);
  result->image = result->truth = result->error_map = Rgb8{};
  shown = std::move(*result);
  has_shown = true;
  if (startup.first_view < 0) startup.first_view = now_seconds() - startup.start;
  return true;
}

void Viewer::take_export_outcome() {
  std::lock_guard<std::mutex> lock(export_outcome->mutex);
  if (!export_outcome->done) return;
  recorder_settings.status = export_outcome->message;
  recorder_settings.exporting = false;
  if (export_outcome->failed) errors.show(export_outcome->message);
  if (!export_outcome->video.empty()) typed_outputs.wrote(export_outcome->video);  // exported again: replaced
  export_outcome->done = false;
}

ViewLayout Viewer::layout_now() {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  area_x = viewport->WorkPos.x + kPanelWidth, area_y = viewport->WorkPos.y;
  area_width = viewport->WorkSize.x - kPanelWidth, area_height = viewport->WorkSize.y;
  const int tiles = 1 + (display.show_truth ? 1 : 0) + (display.show_error ? 1 : 0);
  return layout_view(area_x, area_y, area_width, area_height, source.width, source.height, tiles,
                     window.framebuffer_scale());
}

Viewer::Requests Viewer::input_and_panels(const ViewLayout& layout, double now, const EncodeJob::Progress& progress) {
  Requests r;
  const std::vector<Window::KeyPress> presses = window.take_key_presses();
  r.input = apply_camera_input(camera, display.fly, layout.zoom / layout.framebuffer_scale, ImGui::GetIO().DeltaTime,
                               presses, !script.drives_camera() && !recorder.playing());
  // Before, Esc did nothing while the popup showed (it holds ImGui's keyboard): neither closed it nor quit.
  r.dismiss_error = errors.open() && r.input.dismiss;
  begin_side_panel(kPanelWidth);
  performance_section({stats.fps(now), stats.frame_ms(now), stats.render_ms(now), stats.last_render_ms(),
                       stats.upload_ms(now), stats.views_per_second(now), view_texture.width(), view_texture.height(),
                       threads, (!renderer && !encode.finished()) || (!animating && quiet_frames <= 1)});
  scene_section({&source, renderer != nullptr, encode.encode_seconds(),
                 scene_error.empty() ? progress.stage : "failed: " + scene_error});
  camera_section(camera, display, source, r.panels);
  quality_section(has_shown ? &shown : nullptr, source, display);
  display_section(display, r.panels);
  screenshot_section(screenshot_path, last_screenshot, r.panels);
  r.recorder = recorder_section(recorder, recorder_settings);
  help_section();
  panel_fit = end_side_panel();
  return r;
}

void Viewer::apply(const Requests& r, double now) {
  const InputActions& input = r.input;
  if (input.quit && !r.dismiss_error) window.close();
  if (input.toggle_fly) display.fly = !display.fly;
  if (input.toggle_truth) display.show_truth = !display.show_truth;
  if (input.toggle_error) display.show_error = !display.show_error;
  if (r.panels.vsync_changed) window.set_vsync(display.vsync);
  if (input.reset || r.panels.reset) camera.reset();
  const int direction = (input.snap_next || r.panels.snap_next) - (input.snap_previous || r.panels.snap_previous);
  if (direction != 0) {
    const int view = step_view(snap_list, source, camera, direction);
    if (view >= 0) camera.snap(source.cameras[view], view);
  }
  if (input.add_key || r.recorder.add_key) recorder.add_key(camera.camera());
  apply_recorder(r, now);
}

// Play, save and export build the whole path (PathRecorder::path): one over kMaxPathFrames, or out of memory, is
// refused in the popup with the keys unchanged (before, play and export were outside this catch).
void Viewer::apply_recorder(const Requests& r, double now) {
  const RecorderActions& actions = r.recorder;
  const auto attempt = [this](auto action) {
    try {
      action();
    } catch (const std::exception& e) {
      recorder_settings.status = e.what();
      errors.show(e.what());
    }
  };
  const bool toggle_play = r.input.toggle_play;
  attempt([&] {
    if (actions.play || (toggle_play && !recorder.playing() && !recorder.keys().empty()))
      recorder.play(now, recorder_settings.fps, recorder_settings.loop);
    else if (actions.stop || (toggle_play && recorder.playing()))
      recorder.stop();
  });
  if (actions.save)
    attempt([&] {
      typed_outputs.check_path_file(recorder_settings.file);  // before: replaced any file, an input image too
      recorder.save(recorder_settings.file, cameras_world);
      typed_outputs.wrote(recorder_settings.file);  // saved again under this name: replaced without --force
      recorder_settings.status =
          "saved " + std::to_string(recorder.frame_count()) + " frames to " + recorder_settings.file;
    });
  if (actions.load)
    attempt([&] {
      recorder.load(recorder_settings.file, cameras_world, source.state_path, patch);
      recorder_settings.status = "loaded " + std::to_string(recorder.keys().size()) + " frames";
    });
  if (actions.export_path) attempt([&] { start_export(); });
  if (std::optional<Camera> frame = recorder.frame_at(now)) camera.snap(*frame, -1);
}

void Viewer::start_export() {
  if (!renderer) throw Error("the scene is not encoded yet: nothing to export");
  std::vector<Camera> frames = recorder.path();  // refused here, before the export is marked as started
  recorder_settings.exporting = true;
  recorder_settings.status = "exporting...";
  Run* run = source.run.get();  // the render thread's while the job runs (RenderThread::submit_job)
  std::shared_ptr<const SceneState> state = encode.state();
  PathExport where;
  where.folder = recorder_settings.export_folder;
  where.video = recorder_settings.video;
  where.fps = recorder_settings.fps;
  where.force = o.force;  // as for the other names typed in the window
  where.world = cameras_world;
  renderer->submit_job([run, state, frames = std::move(frames), where, written = typed_outputs,
                        outcome = export_outcome] { export_path(*run, *state, frames, where, written, *outcome); });
}

// The script, once the scene renders. "Current": the camera has settled (adaptive: back at full scale), what
// this frame would request is what was last requested, and that is on screen.
bool Viewer::run_script(double now, bool& capture) {
  if (!renderer || !script.active()) return false;
  const RenderRequest wanted = desired_request(now);
  const bool settled = !display.adaptive || now - last_motion >= kSettleSeconds;
  const bool current = settled && has_shown && renderer->idle() && shown.serial == submitted &&
                       same_camera(wanted.camera, last_request.camera) && wanted.view == last_request.view;
  switch (script.step(camera, stats, now, has_shown, current)) {
    case Script::Step::Run:
      return false;
    case Script::Step::Capture:
      capture = true;
      return false;
    case Script::Step::Finish:
      return true;
  }
  return false;
}

// The render request: the current camera at the resolution scale (lower while moving, when adaptive).
void Viewer::submit_render(double now, bool camera_moving) {
  if (!same_camera(camera.camera(), last_camera)) {
    last_motion = now;
    last_camera = camera.camera();
  }
  if (camera_moving) last_motion = now;
  if (!renderer) return;
  const RenderRequest request = desired_request(now);
  if (submitted == 0 || !same_camera(request.camera, last_request.camera) || request.view != last_request.view) {
    submitted = renderer->submit(request);
    last_request = request;
  }
}

void Viewer::draw(const ViewLayout& layout, const EncodeJob::Progress& progress, bool dismiss_error) {
  std::vector<Tile> tiles{{&view_texture, tile_label("novel view", view_texture, source.height, source.width)}};
  const bool measured = has_shown && shown.measured;
  if (display.show_truth)
    tiles.push_back({measured ? &truth_texture : nullptr,
                     measured ? "ground truth (view " + std::to_string(shown.request.view) + ")"
                              : std::string("ground truth (on a view)")});
  if (display.show_error)
    tiles.push_back({measured ? &error_texture : nullptr,
                     measured ? std::string("error map (|render - truth| x4)") : std::string("error map (on a view)")});
  draw_view(layout, tiles);
  if (display.show_frustums && has_shown) {
    std::vector<char> roles;
    for (int v = 0; v < source.views(); ++v)
      roles.push_back(source.is_input(v) ? 'i' : source.is_target(v) ? 't' : '-');
    draw_frustums(layout, shown.request.camera, source.cameras, roles, frustum_depth(source.cameras));
  }
  if (!encode.finished())
    encode_overlay(area_x, area_y, area_width, area_height, progress.stage, progress.fraction, progress.elapsed_s);
  errors.draw(dismiss_error);
}

bool Viewer::save_capture(const Rgb8& pixels, const ViewLayout& layout, bool finished) {
  try {
    nlohmann::json info;
    info["camera"] = camera_to_json(has_shown ? shown.request.camera : camera.camera());
    info["scene"] = source.selection.scene.name;
    info["model"] = source.model_path;
    info["data"] = source.selection.scene.source;
    info["encode_s"] = encode.encode_seconds();
    info["panel"] = {{"content_width", panel_fit.content_width},
                     {"width", panel_fit.width},
                     {"content_height", panel_fit.content_height},
                     {"height", panel_fit.height},
                     {"scrollbar", panel_fit.scrollbar}};
    if (display.show_frustums) info["frustum_depth"] = frustum_depth(source.cameras);
    if (has_shown) {
      info["scene_view"] = shown.request.view;
      if (shown.measured) {
        info["role"] = source.role(shown.request.view);
        info["psnr"] = shown.psnr;
        info["ssim"] = shown.ssim;
        if (shown.lpips) info["lpips"] = *shown.lpips;
      }
    }
    typed_outputs.check_screenshot(screenshot_path);  // before: a typed DATA/000.png replaced an input image
    const Rgb8 view = view_texture.read_back();
    const std::vector<std::string> files = write_screenshot(screenshot_path, pixels, view, layout, info);
    for (size_t i = 0; i < files.size(); ++i)
      if (i != 1 || !view.empty()) typed_outputs.wrote(files[i]);  // files[1], the view alone, only with a view
    last_screenshot = files[0];
    if (o.screenshot.empty()) screenshot_path = next_screenshot_name();
  } catch (const std::exception& e) {
    if (script.active() || finished) {
      failure = e.what();
      return false;
    }
    errors.show(e.what());
  }
  return true;
}

// VSync caps the frame rate at the display's, also where the swap interval is not honoured (Xvfb, some
// compositors): the UI then leaves the cores to the render thread.
void Viewer::pace(double frame_start) {
  const double frame_end = now_seconds();
  stats.frame(frame_end, frame_end - frame_start);
  if (display.vsync) {
    const double next = previous_frame_end + 1.0 / refresh_rate;
    if (next > frame_end) std::this_thread::sleep_for(std::chrono::duration<double>(next - frame_end));
    previous_frame_end = std::max(next, frame_end);
  } else {
    previous_frame_end = frame_end;
  }
}

bool Viewer::frame() {
  wait_for_events();
  const double frame_start = now_seconds();
  window.begin_frame();
  if (!take_results()) {
    ImGui::EndFrame();
    return false;
  }
  take_export_outcome();
  const ViewLayout layout = layout_now();
  const double now = now_seconds();
  const EncodeJob::Progress progress = encode.progress();
  const Requests requests = input_and_panels(layout, now, progress);
  apply(requests, now);
  bool capture = requests.input.screenshot || requests.panels.screenshot;
  const bool finished = run_script(now, capture);
  submit_render(now, requests.input.camera_moving);
  draw(layout, progress, requests.dismiss_error);
  const std::optional<Rgb8> pixels = window.end_frame(capture);
  if (pixels && !save_capture(*pixels, layout, finished)) return false;
  pace(frame_start);
  // The encode starts once the first frame is up (so it does not share the cores with the window's start-up).
  if (++frame_count == 1) encode.start(), startup.first_frame = now_seconds() - startup.start;
  if (finished) {
    if (o.print_stats)
      print_stats(stats, now_seconds(), source, encode, has_shown ? &shown : nullptr, script, threads, startup);
    if (o.exit) return false;
  }
  return true;
}

bool Viewer::frame_or_out_of_memory() {
  try {
    return frame();
  } catch (const std::bad_alloc&) {
    if (ImGui::GetCurrentContext()->WithinFrameScope) {  // thrown between NewFrame and Render: drop this frame
      ImGui::ErrorCheckEndFrameRecover(nullptr);
      ImGui::EndFrame();
    }
    return !stop_on("out of memory: the last action needed more memory than this machine has");
  }
}

}  // namespace

void run_viewer(const ViewerOptions& o) {
  // Before the window: anything wrong here is the usual one-line error.
  StartupTimes startup;
  startup.start = now_seconds();
  SceneSource source = open_scene_source(o);
  startup.opened = now_seconds() - startup.start;
  // before: `--screenshot DATA/000.png` wrote over an input image
  if (!o.screenshot.empty()) check_screenshot_names(o.screenshot, o.force, session_inputs(source));
  const std::pair<int, int> window_size = parse_window_size(o.window);
  if (!(o.scale > 0 && o.scale <= 1)) throw Error("--scale", "must be in (0, 1]");
  Viewer viewer(o, std::move(source), window_size);
  viewer.startup = startup;
  while (!viewer.window.should_close() && viewer.frame_or_out_of_memory()) {
  }
  // Closed: off the screen now. Before, the window stayed up, frozen, until a camera path export under way (or
  // the render or encode layer under way) finished; the export still finishes, so that its files are whole.
  viewer.window.hide();
  if (viewer.renderer && viewer.renderer->job_running())
    std::fprintf(stderr, "lact: window closed; finishing the camera path export to %s\n",
                 viewer.recorder_settings.export_folder.c_str());
  viewer.renderer.reset();  // before the model and the window go
  if (!viewer.failure.empty()) throw Error(viewer.failure);
  if (!viewer.scene_error.empty() && viewer.scene_error != "cancelled") throw Error(viewer.scene_error);
}

}  // namespace lact::viewer
