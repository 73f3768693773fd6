// serve/served_scenes.h's choice of the states to release under --cache-memory, worked out by hand; and the scene
// a request body or a stream message names (serve/camera_message.h). The engines themselves run end to end in
// tests/cli/serve_scenes_test.py.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "serve/camera_message.h"
#include "serve/served_scenes.h"
#include "system/error.h"

namespace lact::serve {
namespace {

const std::function<bool(int)> kNonePinned = [](int) { return false; };

TEST(StatesToRelease, NothingWhileTheHeldStatesFit) {
  EXPECT_TRUE(states_to_release({100, 0, 200}, {1, 2, 3}, 300, 2, kNonePinned).empty());
  EXPECT_TRUE(states_to_release({0, 0, 0}, {1, 2, 3}, 0, -1, kNonePinned).empty());
}

TEST(StatesToRelease, TheLeastRecentlyUsedFirstUntilTheRestFit) {
  // 100 + 200 + 300 + 400 = 1000 held, bound 550: scene 1 (used at 1) then scene 3 (at 2) leave, 500 stay.
  EXPECT_EQ(states_to_release({100, 200, 300, 400}, {5, 1, 9, 2}, 550, -1, kNonePinned), (std::vector<int>{1, 3}));
  // Bound 900: releasing scene 1 alone (200) is enough.
  EXPECT_EQ(states_to_release({100, 200, 300, 400}, {5, 1, 9, 2}, 900, -1, kNonePinned), (std::vector<int>{1}));
}

TEST(StatesToRelease, NeverTheOneKeptNorAPinnedOne) {
  const std::function<bool(int)> pinned = [](int scene) { return scene == 1; };
  // Scene 1 is the least recent but pinned (a video job), scene 3 is kept (just made ready): 0 and 2 go, by age.
  EXPECT_EQ(states_to_release({100, 200, 300, 400}, {5, 1, 9, 2}, 100, 3, pinned), (std::vector<int>{0, 2}));
  // Over the bound with nothing left to release: the rest stays (the scene asked for is still served).
  EXPECT_TRUE(states_to_release({500, 0}, {1, 2}, 100, 0, kNonePinned).empty());
}

TEST(SceneChoice, ABodyNamesAnIndexBelowTheCount) {
  EXPECT_EQ(body_scene(R"({"c2w": [], "scene": 2})", 3), 2);
  EXPECT_EQ(body_scene(R"({"c2w": []})", 3), std::nullopt);
  EXPECT_EQ(body_scene("not json", 3), std::nullopt);  // the camera's own parse refuses it
  for (const char* bad : {R"({"scene": 3})", R"({"scene": -1})", R"({"scene": "a"})", R"({"scene": 1.5})",
                          R"({"scene": null})", R"({"scene": 99999999999999999999})"})
    EXPECT_THROW(body_scene(bad, 3), Error) << bad;
}

TEST(SceneChoice, AStreamMessageOfTypeScene) {
  const RenderLimits limits;
  EXPECT_EQ(scene_message(R"({"type": "scene", "scene": 1})", 2, limits), 1);
  EXPECT_EQ(scene_message(R"({"type": "camera", "scene": 1})", 2, limits), std::nullopt);
  EXPECT_EQ(scene_message(R"([1, 2])", 2, limits), std::nullopt);
  EXPECT_THROW(scene_message(R"({"type": "scene"})", 2, limits), Error);
  EXPECT_THROW(scene_message(R"({"type": "scene", "scene": 2})", 2, limits), Error);
}

}  // namespace
}  // namespace lact::serve
