// serve/video_jobs.h's table of jobs without a render thread: the render thread here never runs a batch, so the
// first job stays "rendering" as a long job does, while another client starts and cancels jobs behind it.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "pipeline/run.h"
#include "serve/video_jobs.h"

namespace lact::serve {
namespace {

// A lact camera path of `frames` copies of one 64x64 camera.
std::string camera_path_body(int frames) {
  const nlohmann::json camera{{"c2w", {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, -2}, {0, 0, 0, 1}}},
                              {"fx", 70},
                              {"fy", 70},
                              {"cx", 32},
                              {"cy", 32},
                              {"w", 64},
                              {"h", 64}};
  return nlohmann::json{{"frames", std::vector<nlohmann::json>(frames, camera)}}.dump();
}

TEST(VideoJobs, CancelledJobsBehindALongOneAreForgottenAndHoldNoCameras) {
  const std::string out = testing::TempDir() + "/lact_video_jobs_test";
  std::filesystem::remove_all(out);
  lact::Run run{CommonOptions{}};                // qualified: a gtest body sees testing::Test::Run
  std::vector<std::function<void()>> never_run;  // the batches handed to the render thread
  {
    VideoJobs jobs(
        out, VideoLimits{}, [](std::function<void()> f) { f(); },
        [&never_run](int, std::function<void()> batch) {
          never_run.push_back(std::move(batch));
          return true;
        },
        [](int, const nlohmann::json&) {});
    const int long_job = jobs.start(0, camera_path_body(100), run, nullptr)["id"];
    int first = 0, last = 0;
    for (int i = 0; i < 200; ++i) {
      last = jobs.start(1, camera_path_body(100), run, nullptr)["id"];
      if (!first) first = last;
      ASSERT_TRUE(jobs.cancel(last));
    }
    // Before: every cancelled job was kept (201 jobs, 20100 cameras) while the oldest was unfinished.
    EXPECT_EQ(jobs.jobs_known(), 1u + 64u);
    EXPECT_EQ(jobs.cameras_held(), 100u);  // the long job's alone
    EXPECT_EQ(jobs.status(long_job).at("state"), "rendering");
    EXPECT_TRUE(jobs.status(first).is_null());
    EXPECT_EQ(jobs.status(last).at("state"), "cancelled");
    EXPECT_EQ(jobs.status(last).at("frames"), 100);
    EXPECT_EQ(jobs.status(last).at("width"), 64);
  }
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace lact::serve
