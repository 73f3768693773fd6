// Model::RenderLayerCheck: told before each layer of every render batch, and a check that throws stops the
// render there. The layers that ran are counted independently of the check, from the CPU backend's op profile
// (layer_norm calls: the input norm, each module's pre-norm in every layer, the decoder norm); the model then
// renders the same pixels as before the stop, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/random_weights.h"
#include "kernels/backend_factory.h"
#include "tests/common/small_models.h"

namespace lact {
namespace {

using test::random_views;
using test::small_config;

struct StopHere {};  // what the test's check throws

int64_t layer_norm_calls(const std::vector<OpProfile>& ops) {
  for (const OpProfile& op : ops)
    if (op.op == "layer_norm") return op.calls;
  return 0;
}

struct Rendered {
  std::vector<std::pair<int, int>> told;  // (layers done, layers) as the check was told
  int64_t layer_norms = 0;                // the backend's layer_norm calls during the render
  bool stopped = false;
};

// Renders `cameras` into `out` with a check that throws when told (stop_batch's batch, stop_at layers done).
Rendered render(Backend& be, Model& model, const SceneState& state, const std::vector<Camera>& cameras,
                std::vector<float>& out, int stop_at, int stop_batch = 0) {
  Rendered r;
  int batch = -1;
  model.set_render_layer_check([&](int done, int layers) {
    if (done == 0) ++batch;
    r.told.emplace_back(done, layers);
    if (done == stop_at && batch == stop_batch) throw StopHere{};
  });
  if (!be.start_profiling()) ADD_FAILURE() << "the CPU backend does not count its ops";
  try {
    model.render_into(state, cameras, out.data());
  } catch (const StopHere&) {
    r.stopped = true;
  }
  r.layer_norms = layer_norm_calls(be.stop_profiling());
  model.set_render_layer_check({});
  return r;
}

TEST(RenderStop, ACheckThatThrowsStopsTheRenderBeforeThatLayer) {
  auto be = make_cpu_backend(2);
  ModelConfig config = small_config(false, 2);
  config.layers = 4;
  Model model(random_model_weights(config, *be, 5), *be);
  const SceneState state = model.encode(random_views(2, 32, 48));
  const std::vector<Camera> one = {random_views(1, 32, 48, 7)[0].camera};
  const size_t values = 32 * 48 * 3;

  std::vector<float> whole(values, -1);
  const Rendered full = render(*be, model, state, one, whole, -1);
  ASSERT_FALSE(full.stopped);
  ASSERT_EQ(full.told.size(), 4u);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(full.told[j], std::make_pair(j, 4));
  // every layer the same modules: the input norm and the decoder norm, the rest an equal share per layer
  const int64_t per_layer = (full.layer_norms - 2) / 4;
  ASSERT_EQ(full.layer_norms, 2 + 4 * per_layer);
  ASSERT_GE(per_layer, 3);  // one pre-norm per module at least

  for (int k = 0; k < 4; ++k) {
    SCOPED_TRACE("stop at layer " + std::to_string(k));
    std::vector<float> out(values, -1);
    const Rendered part = render(*be, model, state, one, out, k);
    EXPECT_TRUE(part.stopped);
    EXPECT_EQ(part.told.size(), static_cast<size_t>(k + 1));
    EXPECT_EQ(part.layer_norms, 1 + k * per_layer);  // the input norm and k whole layers, no more
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return v == -1; }));
    std::vector<float> again(values, -1);
    EXPECT_FALSE(render(*be, model, state, one, again, -1).stopped);
    EXPECT_EQ(again, whole);  // the model and state as they were
  }
}

TEST(RenderStop, AStopInTheSecondBatchKeepsTheFirstBatchsImages) {
  auto be = make_cpu_backend(2);
  ModelOptions options;
  options.token_tile = 24;  // one 32x48 view (24 tokens) a batch
  Model model(random_model_weights(small_config(false, 2), *be, 5), *be, options);
  const SceneState state = model.encode(random_views(2, 32, 48));
  std::vector<Camera> two;
  for (const PosedImage& v : random_views(2, 32, 48, 7)) two.push_back(v.camera);
  const size_t values = 32 * 48 * 3;
  std::vector<float> whole(2 * values, -1);
  ASSERT_FALSE(render(*be, model, state, two, whole, -1).stopped);

  std::vector<float> out(2 * values, -1);
  const Rendered part = render(*be, model, state, two, out, 1, 1);
  EXPECT_TRUE(part.stopped);
  EXPECT_EQ(part.told, (std::vector<std::pair<int, int>>{{0, 2}, {1, 2}, {0, 2}, {1, 2}}));
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + values, whole.begin()));  // the first batch written
  EXPECT_TRUE(std::all_of(out.begin() + values, out.end(), [](float v) { return v == -1; }));
}

}  // namespace
}  // namespace lact
