// The host part of a render's memory check (pipeline/memory_check.h) on the CPU backend, by hand: the images kept
// through an evaluation's renders besides the targets. Its input views stay alive through every batch (the caller
// keeps them and the nearest-input baseline copies each), and a four-batch 256x256 evaluation with the fixture model
// peaked about 5 MiB above an estimate that left them out (an evaluation of the fixture scene says how many it keeps).
// And the process's part leaves out freed heap memory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/memory_estimate.h"
#include "core/model.h"
#include "core/random_weights.h"
#include "kernels/backend_factory.h"
#include "pipeline/memory_check.h"
#include "pipeline/run.h"
#include "system/host_memory.h"
#include "tests/common/small_models.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

namespace fs = std::filesystem;

// One view at 64x64 as the host keeps it: 3 floats a pixel.
constexpr int64_t kViewBytes = 64 * 64 * 3 * 4;

// The host part (EncodeMemory::views) of the estimate check_memory_need makes for renders of `views` at 64x64 on
// the CPU backend, with `kept` images kept beside them.
int64_t host_bytes_checked(const Model& model, int64_t views, int64_t kept) {
  MemoryNeed need;
  need.render_sizes = {{64, 64}};
  need.render_views = views;
  need.render_kept_views = kept;
  std::vector<EncodePlan> renders;
  check_memory_need(model, need, &renders);
  return renders.at(0).need.views;
}

// An evaluation of 4 targets (one batch of 4 at 64x64, small_config's patch 8: 256 tokens, far below a token tile)
// from 3 input views read for the encode and 1 nearest input read besides: the host holds the batch's rgb copy (4
// views), its 4 images, the 4 targets and 2 x 3 + 1 kept images, 19 views of 49152 bytes: 933888 bytes; with
// nothing kept 12 views: 589824.
TEST(RenderMemory, CountsTheImagesKeptThroughTheRenders) {
  std::unique_ptr<Backend> be = make_backend("cpu", 1);
  const ModelConfig config = test::small_config(false, 2);
  const Model model(random_model_weights(config, *be, 7), *be, ModelOptions{});
  EXPECT_EQ(kViewBytes, 49152);
  EXPECT_EQ(host_bytes_checked(model, 4, 0), 589824);
  EXPECT_EQ(host_bytes_checked(model, 4, 2 * 3 + 1), 933888);
  // Beside a batch of 2 the same 7 kept images add 7 views' bytes.
  EXPECT_EQ(host_bytes_checked(model, 2, 7) - host_bytes_checked(model, 2, 0), 7 * kViewBytes);
}

// check_render_memory takes the kept images as its last argument: counted once each, beside the call's own.
TEST(RenderMemory, ARenderCheckCountsItsKeptImages) {
  std::unique_ptr<Backend> be = make_backend("cpu", 1);
  const ModelConfig config = test::small_config(false, 2);
  const Model model(random_model_weights(config, *be, 7), *be, ModelOptions{});
  // A batch of 2 in a call of 8 with 8 targets: 18 views; 5 kept besides: 23.
  EXPECT_EQ(check_render_memory(model, 2, 8, 8, 64, 64, "--size").need.views, 18 * kViewBytes);
  EXPECT_EQ(check_render_memory(model, 2, 8, 8, 64, 64, "--size", {}, 5).need.views, 23 * kViewBytes);
  EXPECT_EQ(check_render_memory(model, 2, 8, 8, 64, 64, "--size", {}, 5).need.views, 1130496);
}

// An evaluation counts its input views: the fixture scene's 3 inputs (read for the encode and kept through the
// renders, the nearest-input baseline reading them in place) beside its one target at 256x256, where a view is 768
// KiB: the render's host part is the batch's rgb copy, its image, the target and the 3 kept views, 6 views: 4.5 MiB,
// which LACT_MEMORY_ESTIMATE prints as 5 MiB (without them 2 MiB).
TEST(RenderMemory, AnEvaluationKeepsItsInputViews) {
  const fs::path fixture = test::env_path("LACT_FIXTURE_DIR");
  const fs::path folder = fs::temp_directory_path() / ("lact_render_memory_" + std::to_string(::getpid()));
  fs::remove_all(folder);
  CommonOptions common;
  common.threads = 1;
  OutputOptions out;
  out.folder = folder.string();
  out.warnings = "off";
  SceneRequest request;
  request.model = (fixture / "model.safetensors").string();
  request.data.data = (fixture / "scene").string();
  request.data.inputs = "0,1,2";
  request.data.size = {256, 256};
  request.targets = "3";
  ::setenv("LACT_MEMORY_ESTIMATE", "1", 1);
  testing::internal::CaptureStderr();
  lact::Run(common, out).evaluate(request);  // qualified: a gtest body sees testing::Test::Run
  const std::string said = testing::internal::GetCapturedStderr();
  ::unsetenv("LACT_MEMORY_ESTIMATE");
  fs::remove_all(folder);
  const size_t render = said.find("rendering 1 views at 256x256 at a time");
  ASSERT_NE(render, std::string::npos) << said;
  const size_t parts = said.find("estimate parts: process ", render);
  ASSERT_NE(parts, std::string::npos) << said;
  const size_t views = said.find(", views ", parts);
  ASSERT_NE(views, std::string::npos) << said;
  EXPECT_EQ(said.substr(views, said.find(',', views + 1) - views), ", views 5 MiB") << said;
}

// What the process holds before a render's (or an encode's) buffers leaves out heap memory that was freed: glibc
// keeps it resident below a live block (an earlier scene's images, each under the 1 MiB mmap threshold), and it came
// again beside this work's buffers, which reuse it. 32 MiB of 512 KiB blocks, written and freed below a live one.
TEST(RenderMemory, FreedHeapMemoryIsNotCountedAsHeld) {
  if (std::getenv("LACT_SANITIZED")) GTEST_SKIP() << "AddressSanitizer's allocator keeps freed memory in quarantine";
  std::unique_ptr<Backend> be = make_backend("cpu", 1);
  const ModelConfig config = test::small_config(false, 2);
  const Model model(random_model_weights(config, *be, 7), *be, ModelOptions{});
  const int64_t before = process_memory_besides_encode(model);
  constexpr size_t kBlock = size_t{512} << 10;
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(std::memset(std::malloc(kBlock), i + 1, kBlock));
  void* above = std::memset(std::malloc(kBlock), 1, kBlock);  // the heap's top, taken last: no trim on free
  const int64_t written = resident_bytes();
  for (void* block : blocks) std::free(block);
  ASSERT_GE(resident_bytes(), written - int64_t(1 << 20));  // still resident
  EXPECT_LT(process_memory_besides_encode(model), before + int64_t(8 << 20));
  std::free(above);
}

}  // namespace
}  // namespace lact
