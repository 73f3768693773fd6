// session/state_cache.h: the states of many scenes within a memory bound, worked out by hand on a simulated disk
// (a map from path to state) and scenes whose state sizes are chosen (the `bytes` callback).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "session/state_cache.h"
#include "system/error.h"

namespace lact::session {
namespace {

struct Disk {
  std::map<std::string, SceneState> files;
  std::map<std::string, int> encodes;  // per scene
  std::map<std::string, int64_t> size_of = {{"a", 40}, {"b", 30}, {"c", 50}, {"big", 500}};

  StateCache cache(int64_t bound) {
    StateCache::Callbacks c;
    c.encode = [this](const std::string& scene) {
      ++encodes[scene];
      SceneState s;
      s.height = static_cast<int>(size_of.at(scene));  // the size travels with the state
      s.width = static_cast<int>(scene.size());
      return s;
    };
    c.load = [this](const std::string& path) { return files.at(path); };
    c.save = [this](const SceneState& s, const std::string& path) { files[path] = s; };
    c.exists = [this](const std::string& path) { return files.count(path) > 0; };
    c.bytes = [](const SceneState& s) { return static_cast<int64_t>(s.height); };
    return StateCache(
        bound, [](const std::string& scene) { return "out/" + scene + ".state"; }, c);
  }
};

TEST(StateCache, EncodesOnceSpillsAndEvictsTheLeastRecentlyUsed) {
  Disk disk;
  StateCache cache = disk.cache(100);
  EXPECT_EQ(cache.get("a")->height, 40);
  EXPECT_EQ(cache.get("b")->height, 30);  // 70 held
  EXPECT_EQ(cache.get("a")->height, 40);  // a hit: a is now the most recent
  EXPECT_EQ(cache.counts().hits, 1);
  cache.get("c");  // 120 > 100: b (least recent) leaves, a stays
  EXPECT_TRUE(cache.holds("a"));
  EXPECT_FALSE(cache.holds("b"));
  EXPECT_TRUE(cache.holds("c"));
  EXPECT_EQ(cache.counts().bytes, 90);
  EXPECT_EQ(cache.counts().evictions, 1);
  EXPECT_EQ(disk.files.count("out/b.state"), 1u);  // spilled when it was encoded
  cache.get("b");  // read back from its file, not encoded again; a (now least recent) leaves
  EXPECT_EQ(disk.encodes["b"], 1);
  EXPECT_EQ(cache.counts().loads, 1);
  EXPECT_FALSE(cache.holds("a"));
  EXPECT_EQ(cache.counts().bytes, 80);
  EXPECT_EQ(cache.counts().encodes, 3);
}

TEST(StateCache, AStateInUseOutlivesItsEviction) {
  Disk disk;
  StateCache cache = disk.cache(60);
  std::shared_ptr<const SceneState> a = cache.get("a");
  cache.get("c");  // 90 > 60: a leaves the cache
  EXPECT_FALSE(cache.holds("a"));
  EXPECT_EQ(a->height, 40);  // the render holding it still reads it
  EXPECT_EQ(a->width, 1);
}

TEST(StateCache, AStateLargerThanTheBoundIsServedAlone) {
  Disk disk;
  StateCache cache = disk.cache(100);
  cache.get("a");
  cache.get("b");
  EXPECT_EQ(cache.get("big")->height, 500);
  EXPECT_EQ(cache.counts().held, 1);
  EXPECT_EQ(cache.counts().bytes, 500);
  cache.get("a");  // read back; big leaves
  EXPECT_EQ(cache.counts().held, 1);
  EXPECT_EQ(disk.encodes["a"], 1);
}

TEST(StateCache, AnExistingStateFileIsNeverEncoded) {
  Disk disk;
  SceneState saved;
  saved.height = 30;
  saved.width = 7;
  disk.files["out/b.state"] = saved;
  StateCache cache = disk.cache(100);
  EXPECT_EQ(cache.get("b")->width, 7);
  EXPECT_EQ(disk.encodes.count("b"), 0u);
}

TEST(StateCache, ANegativeBoundIsRefused) {
  Disk disk;
  EXPECT_THROW(disk.cache(-1), Error);
}

}  // namespace
}  // namespace lact::session
