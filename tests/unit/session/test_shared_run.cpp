// Threads that share one Run (lact serve's scenes: session/render_thread.h, session/encode_job.h, Run::exclusive):
// two scenes' render threads interleaved on one Run give each scene's own render, as the Run renders it alone;
// a render thread or an encode waiting for the Run while another holds it ends when told to, without waiting.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "pipeline/run.h"
#include "session/encode_job.h"
#include "session/render_thread.h"
#include "session/scene_source.h"
#include "tests/common/test_util.h"

namespace lact::session {
namespace {

namespace fs = std::filesystem;

// The fixture scene with `inputs`, through `shared` (a new Run when null), one thread.
SceneSource open_fixture(const std::string& inputs, std::shared_ptr<Run> shared = nullptr) {
  SceneOptions o;
  o.common.threads = 1;
  o.model = (fs::path(test::env_path("LACT_FIXTURE_DIR")) / "model.safetensors").string();
  o.data.data = (fs::path(test::env_path("LACT_FIXTURE_DIR")) / "scene").string();
  o.data.inputs = inputs;
  o.targets = "";
  o.no_lpips = true;
  return open_scene_source(o, std::move(shared));
}

std::shared_ptr<const SceneState> encoded(const SceneSource& s) {
  return std::make_shared<SceneState>(
      s.run->encode_views(selected_views(s.selection, s.selection.inputs, true), "--inputs"));
}

// The newest view of `channel`, waiting for it.
RenderedView wait_for(RenderThread& thread, int channel) {
  for (;;) {
    if (std::optional<RenderedView> view = thread.take(channel)) return *view;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(SharedRun, TwoScenesRenderThreadsTakeTheRunInTurn) {
  SceneSource a = open_fixture("0,1");
  SceneSource b = open_fixture("2,3", a.run);
  ASSERT_EQ(a.run.get(), b.run.get());
  ASSERT_EQ(a.model, b.model);  // one model loaded once
  const auto state_a = encoded(a), state_b = encoded(b);
  const Camera camera = a.cameras.at(4);
  RenderRequest request;
  request.camera = camera;
  const Rgb8 alone_a = to_rgb8(a.run->render(*state_a, camera, camera.height, camera.width));
  const Rgb8 alone_b = to_rgb8(a.run->render(*state_b, camera, camera.height, camera.width));
  ASSERT_NE(alone_a.pixels, alone_b.pixels);  // the two scenes render differently
  {
    RenderThread ta(*a.run, state_a, {}, a.width, a.height, 1, {});
    RenderThread tb(*b.run, state_b, {}, b.width, b.height, 1, {});
    for (int round = 0; round < 8; ++round) {
      ta.submit(request, round);
      tb.submit(request, round);
      EXPECT_EQ(wait_for(ta, round).image.pixels, alone_a.pixels) << round;
      EXPECT_EQ(wait_for(tb, round).image.pixels, alone_b.pixels) << round;
    }
  }
}

TEST(SharedRun, AStoppedRenderThreadDoesNotWaitForTheRun) {
  SceneSource a = open_fixture("0,1");
  const auto state = encoded(a);
  RenderRequest request;
  request.camera = a.cameras.at(4);
  std::unique_lock<std::timed_mutex> held(a.run->exclusive());  // another scene's encode, say
  {
    RenderThread waiting(*a.run, state, {}, a.width, a.height, 1, {});
    waiting.submit(request, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // it waits for the Run now
    EXPECT_FALSE(waiting.take(0));
  }  // destroyed: it gives up the wait (before, it rendered once the Run was free, and this scope never ended)
  held.unlock();
  RenderThread free(*a.run, state, {}, a.width, a.height, 1, {});
  free.submit(request, 0);
  EXPECT_EQ(wait_for(free, 0).image.pixels,
            to_rgb8(a.run->render(*state, request.camera, request.camera.height, request.camera.width)).pixels);
}

TEST(SharedRun, AnEncodeWaitingForTheRunIsCancelled) {
  SceneSource a = open_fixture("0,1");
  std::unique_lock<std::timed_mutex> held(a.run->exclusive());
  {
    EncodeJob job(a, 1, {});
    job.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(job.finished());  // waiting for the Run (after reading its views)
  }                                // destroyed: cancelled while waiting
  held.unlock();
  EncodeJob job(a, 1, {});
  job.start();
  while (!job.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(job.error(), "");
  EXPECT_EQ(job.state()->floats(), encoded(a)->floats());
}

}  // namespace
}  // namespace lact::session
