// The path editor's server side without a socket (serve/path_routes.h and its routes in serve/request_rules.h):
// names, the interpolation's bounds and answer, saving without replacing, listing and loading.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/camera_geometry.h"
#include "datasets/camera_path_io.h"
#include "serve/path_routes.h"
#include "serve/request_rules.h"

namespace fs = std::filesystem;

namespace lact::serve {
namespace {

int refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const PathRefusal& r) {
    EXPECT_EQ(r.message.find('\n'), std::string::npos) << r.message;
    return r.status;
  }
  return 0;
}

nlohmann::json keys(int count) {
  nlohmann::json out = nlohmann::json::array();
  for (int i = 0; i < count; ++i) {
    Camera c = pinhole(64, 48, 50);
    c.c2w = look_at({3.0 * std::cos(i), 3.0 * std::sin(i), 1}, {0, 0, 0}, {0, 0, 1});
    out.push_back(camera_to_json(c));
  }
  return out;
}

TEST(PathRoutes, NamesAreCheckedBeforeAnyFile) {
  for (const char* good : {"a", "path-1", "my_path.v2", "A0"}) EXPECT_EQ(refusal([&] { check_path_name(good); }), 0);
  const std::vector<std::string> bad_names = {"",
                                              ".",
                                              "..",
                                              ".hidden",
                                              "a/b",
                                              "a..b",
                                              "../x",
                                              "a\\b",
                                              "sp ace",
                                              "%2e%2e",
                                              std::string(65, 'x'),
                                              std::string("a\0b", 3)};
  for (const std::string& bad : bad_names) EXPECT_EQ(refusal([&] { check_path_name(bad); }), 400) << bad;
}

TEST(PathRoutes, InterpolationIsCorePathsAndBounded) {
  PathLimits limits;
  limits.max_frames = 50, limits.max_keys = 4;
  const nlohmann::json k = keys(3);
  const nlohmann::json answer =
      interpolate_body(nlohmann::json{{"keyframes", k}, {"frames", 7}, {"smoothness", 0.3}}.dump(), limits);
  std::vector<Camera> cameras;
  for (const auto& f : k) cameras.push_back(camera_from_json(f, "key"));
  const std::vector<Camera> expected = interpolate_path_frames(cameras, 7, 0.3);
  ASSERT_EQ(answer.at("frames").size(), 7u);
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(answer.at("frames")[i], camera_to_json(expected[i])) << i;
  const nlohmann::json one = interpolate_body(nlohmann::json{{"keyframes", keys(1)}, {"frames", 3}}.dump(), limits);
  EXPECT_EQ(one.at("frames"), nlohmann::json::array({k[0], k[0], k[0]}));
  auto status = [&](const nlohmann::json& body) { return refusal([&] { interpolate_body(body.dump(), limits); }); };
  EXPECT_EQ(status({{"keyframes", k}, {"frames", 51}}), 413);
  EXPECT_EQ(status({{"keyframes", keys(5)}, {"frames", 5}}), 413);
  EXPECT_EQ(status({{"keyframes", k}, {"frames", 0}}), 400);
  EXPECT_EQ(status({{"keyframes", k}, {"frames", 2.5}}), 400);
  EXPECT_EQ(status({{"keyframes", k}, {"frames", 5}, {"smoothness", -0.1}}), 400);
  EXPECT_EQ(status({{"keyframes", nlohmann::json::array()}, {"frames", 5}}), 400);
  EXPECT_EQ(status({{"frames", 5}}), 400);
  EXPECT_EQ(refusal([&] { interpolate_body("{", limits); }), 400);
}

TEST(PathRoutes, SavedOnceListedLoadedReplacedOnlyWhenAsked) {
  const fs::path folder = fs::temp_directory_path() / ("lact_path_routes_" + std::to_string(::getpid()));
  fs::remove_all(folder);
  const PathLimits limits;
  const std::string body = nlohmann::json{{"frames", keys(2)}, {"fps", 24}, {"keyframes", keys(2)}}.dump();
  EXPECT_EQ(list_paths(folder.string()), (nlohmann::json{{"paths", nlohmann::json::array()}}));  // no folder yet
  EXPECT_EQ(save_path(folder.string(), "p1", body, false, limits).at("frames"), 2);
  EXPECT_EQ(refusal([&] { save_path(folder.string(), "p1", body, false, limits); }), 409);
  const std::string shorter = nlohmann::json{{"frames", keys(1)}}.dump();
  EXPECT_EQ(save_path(folder.string(), "p1", shorter, true, limits).at("frames"), 1);
  const std::string file = (folder / "p1.json").string();
  EXPECT_EQ(read_camera_path(file).size(), 1u);  // a lact camera-path file
  EXPECT_EQ(nlohmann::json::parse(load_path(folder.string(), "p1", limits)).at("frames").size(), 1u);
  std::ofstream(folder / ".hidden.json") << "{}";
  std::ofstream(folder / "notes.txt") << "x";
  fs::create_directory(folder / "dir.json");
  EXPECT_EQ(list_paths(folder.string()), (nlohmann::json{{"paths", {"p1"}}}));
  EXPECT_EQ(refusal([&] { load_path(folder.string(), "missing", limits); }), 404);
  EXPECT_EQ(refusal([&] { load_path(folder.string(), "dir", limits); }), 404);
  EXPECT_EQ(refusal([&] { save_path(folder.string(), "dir", body, true, limits); }), 409);
  EXPECT_EQ(refusal([&] { save_path(folder.string(), "../up", body, true, limits); }), 400);
  EXPECT_EQ(refusal([&] { save_path(folder.string(), "bad", "{\"frames\": [1]}", false, limits); }), 400);
  EXPECT_FALSE(fs::exists(folder / "bad.json"));
  for (int i = 0; i < 1005; ++i) std::ofstream(folder / ("n" + std::to_string(10000 + i) + ".json")) << "{}";
  const nlohmann::json many = list_paths(folder.string()).at("paths");
  EXPECT_EQ(many.size(), 1000u);  // the first 1000 by name
  EXPECT_EQ(many.front(), "n10000");
  EXPECT_EQ(many.back(), "n10999");
  // A new name past the bound is refused and nothing written (each file up to 1 MiB: the disk is not filled); a
  // replace of a saved one is still taken.
  EXPECT_EQ(refusal([&] { save_path(folder.string(), "one-more", body, false, limits); }), 507);
  EXPECT_FALSE(fs::exists(folder / "one-more.json"));
  EXPECT_EQ(save_path(folder.string(), "p1", body, true, limits).at("frames"), 2);
  PathLimits above_listing = limits;
  above_listing.max_saved = 2000;  // never past what the listing shows
  EXPECT_EQ(refusal([&] { save_path(folder.string(), "one-more", body, false, above_listing); }), 507);
  fs::remove_all(folder);
}

TEST(PathRoutes, RoutesAndTheirBodies) {
  RequestHead h;
  h.method = "POST", h.target = "/api/path/interpolate", h.host = "127.0.0.1:8080", h.content_length = 900000;
  const ServerRules rules;  // no token: loopback only
  Decision d = screen_request(h, rules);
  EXPECT_EQ(d.action, Action::path_interpolate);
  EXPECT_TRUE(takes_body(d.action) && takes_path_body(d.action));
  h.target = "/api/paths/my-path?replace=1";
  d = screen_request(h, rules);
  EXPECT_EQ(d.action, Action::path_save);
  EXPECT_EQ(d.name, "my-path");
  EXPECT_TRUE(d.replace);
  h.content_length = rules.max_video_body + 1;
  EXPECT_EQ(screen_request(h, rules).status, 413);
  h.method = "GET", h.content_length = 0;
  d = screen_request(h, rules);
  EXPECT_EQ(d.action, Action::path_load);
  EXPECT_FALSE(d.replace);
  h.target = "/api/paths";
  EXPECT_EQ(screen_request(h, rules).action, Action::path_list);
  h.content_length = 10;  // a GET with a body: refused, never read
  EXPECT_EQ(screen_request(h, rules).status, 400);
  h.method = "DELETE", h.target = "/api/paths/x", h.content_length = 0;
  EXPECT_EQ(screen_request(h, rules).status, 405);
  h.method = "GET", h.target = "/api/path/interpolate";
  EXPECT_EQ(screen_request(h, rules).status, 405);
}

}  // namespace
}  // namespace lact::serve
