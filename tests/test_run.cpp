// The Run's per-camera render (pipeline/run.h), as the viewer and a Python module call it: the fixture scene
// encoded by a Run, one camera rendered at its own size and at another, against Model::render of a camera scaled
// by hand from a state encoded without the Run; a size the patch does not divide is refused naming it.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "pipeline/run.h"
#include "tests/test_util.h"

namespace lact {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  std::string model = (fs::path(test::env_path("LACT_FIXTURE_DIR")) / "model.safetensors").string();
  DataOptions data;
  Fixture() {
    data.data = (fs::path(test::env_path("LACT_FIXTURE_DIR")) / "scene").string();
    data.inputs = "0,1,2";
  }
};

CommonOptions one_thread() {
  CommonOptions common;
  common.threads = 1;
  return common;
}

float largest_difference(const Image& a, const Image& b) {
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  if (a.rgb.size() != b.rgb.size()) return 1e9f;
  float most = 0;
  for (size_t i = 0; i < a.rgb.size(); ++i) most = std::max(most, std::abs(a.rgb[i] - b.rgb[i]));
  return most;
}

TEST(PipelineRun, RenderOneCameraAtItsSizeAndAnother) {
  const Fixture f;
  lact::Run run(one_thread());  // qualified: a gtest body sees testing::Test::Run
  run.load_model(f.model);
  const SceneSelection selection = run.select(f.data);
  const SceneState state = run.encode(selection);
  const Camera target = selected_views(selection, {3}, false).at(0).camera;

  // The reference: the same views encoded by a model of its own, the camera scaled by hand.
  std::unique_ptr<Backend> backend = make_backend(one_thread());
  const Model model(load_model(f.model, *backend), *backend);
  const SceneState reference = model.encode(selected_views(selection, selection.inputs, true));
  Camera half = target;
  half.width = target.width / 2, half.height = target.height / 2;
  half.fx = target.fx / 2, half.fy = target.fy / 2, half.cx = target.cx / 2, half.cy = target.cy / 2;

  const Image full = run.render(state, target, target.height, target.width);
  EXPECT_EQ(full.height, target.height);
  EXPECT_LT(largest_difference(full, model.render(reference, {target}).at(0)), 1e-5f);
  const Image small = run.render(state, target, half.height, half.width);
  EXPECT_EQ(small.width, half.width);
  EXPECT_LT(largest_difference(small, model.render(reference, {half}).at(0)), 1e-5f);
  EXPECT_GT(largest_difference(full, Image{full.width, full.height, std::vector<float>(full.rgb.size(), 0.0f)}),
            0.01f);  // a real image, not an empty one
}

TEST(PipelineRun, RenderRefusesASizeThePatchDoesNotDivide) {
  const Fixture f;
  lact::Run run(one_thread());  // qualified: a gtest body sees testing::Test::Run
  run.load_model(f.model);
  const SceneSelection selection = run.select(f.data);
  const SceneState state = run.encode(selection);
  const Camera target = selected_views(selection, {3}, false).at(0).camera;
  try {
    run.render(state, target, 12, target.width);
    FAIL() << "12 rows rendered with patch size 8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("size 12x" + std::to_string(target.width)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("patch size 8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lact
