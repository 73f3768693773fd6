// The layout readers, view selection, pose normalisation and preprocessing.
// One scene written in four layouts (OpenCV <-> OpenGL, pixel focal <-> camera_angle_x, list <-> dict)
// must give the same rays (<= 1e-5); the rest against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/tokens.h"
#include "datasets/camera_path_io.h"
#include "datasets/image_io.h"
#include "datasets/json_util.h"
#include "datasets/pose_normalization.h"
#include "datasets/preprocess.h"
#include "datasets/scene.h"
#include "datasets/view_selection.h"
#include "system/error.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A camera at `position` looking at the origin, z-up world, OpenCV axes.
std::array<double, 16> look_at_origin(double x, double y, double z) {
  const double n = std::sqrt(x * x + y * y + z * z);
  const double f[3] = {-x / n, -y / n, -z / n};
  double r[3] = {f[1], -f[0], 0.0};  // forward x up(z)
  const double rn = std::sqrt(r[0] * r[0] + r[1] * r[1]);
  r[0] /= rn, r[1] /= rn;
  const double d[3] = {f[1] * r[2] - f[2] * r[1], f[2] * r[0] - f[0] * r[2], f[0] * r[1] - f[1] * r[0]};
  return {r[0], d[0], f[0], x, r[1], d[1], f[1], y, r[2], d[2], f[2], z, 0, 0, 0, 1};
}

json matrix_json(const std::array<double, 16>& m) {
  json rows = json::array();
  for (int r = 0; r < 4; ++r) rows.push_back({m[r * 4], m[r * 4 + 1], m[r * 4 + 2], m[r * 4 + 3]});
  return rows;
}

std::array<double, 16> opencv_to_opengl(std::array<double, 16> c2w) {
  for (int r = 0; r < 4; ++r) c2w[r * 4 + 1] = -c2w[r * 4 + 1], c2w[r * 4 + 2] = -c2w[r * 4 + 2];
  return c2w;
}

class FourLayouts : public ::testing::Test {
 protected:
  static constexpr int kWidth = 48, kHeight = 32;
  static constexpr double kFocal = 41.5;

  void SetUp() override {
    root = fs::temp_directory_path() / ("lact_layouts_" + std::to_string(::getpid()));
    fs::create_directories(root);
    for (int i = 0; i < 4; ++i) {
      const double a = 0.7 + 1.3 * i, e = 0.2 + 0.15 * i;
      poses.push_back(
          look_at_origin(2.7 * std::cos(a) * std::cos(e), 2.7 * std::sin(a) * std::cos(e), 2.7 * std::sin(e)));
    }
    Image img{kWidth, kHeight, std::vector<float>(kWidth * kHeight * 3, 0.25f)};
    for (const char* dir : {"list", "dict", "nerfstudio", "synthetic/train"}) {
      fs::create_directories(root / dir);
      for (int i = 0; i < 4; ++i) write_png((root / dir / ("r_" + std::to_string(i) + ".png")).string(), img);
    }
    json list = json::array(), ns_frames = json::array(), synthetic_frames = json::array();
    for (int i = 0; i < 4; ++i) {
      std::array<double, 16> w2c;
      ASSERT_TRUE(invert4(poses[i], w2c));
      const std::string file = "r_" + std::to_string(i) + ".png";
      list.push_back({{"w", kWidth},
                      {"h", kHeight},
                      {"fx", kFocal},
                      {"fy", kFocal},
                      {"cx", kWidth / 2.0},
                      {"cy", kHeight / 2.0},
                      {"w2c", matrix_json(w2c)},
                      {"file_path", file}});
      ns_frames.push_back({{"file_path", file}, {"transform_matrix", matrix_json(opencv_to_opengl(poses[i]))}});
      synthetic_frames.push_back({{"file_path", "./train/r_" + std::to_string(i)},
                                  {"transform_matrix", matrix_json(opencv_to_opengl(poses[i]))}});
    }
    std::ofstream(root / "list/opencv_cameras.json") << list.dump();
    std::ofstream(root / "dict/opencv_cameras.json") << json{{"scene_name", "desk"}, {"frames", list}}.dump();
    std::ofstream(root / "nerfstudio/transforms.json")
        << json{{"fl_x", kFocal}, {"fl_y", kFocal}, {"cx", kWidth / 2.0}, {"cy", kHeight / 2.0},
                {"w", kWidth},    {"h", kHeight},   {"frames", ns_frames}}
               .dump();
    std::ofstream(root / "synthetic/transforms_train.json")
        << json{{"camera_angle_x", 2.0 * std::atan(kWidth / (2.0 * kFocal))}, {"frames", synthetic_frames}}.dump();
  }
  void TearDown() override { fs::remove_all(root); }

  fs::path root;
  std::vector<std::array<double, 16>> poses;
};

TEST_F(FourLayouts, EveryReaderGivesTheSameRays) {
  const std::vector<std::pair<std::string, std::string>> layouts = {
      {"list", "lact"}, {"dict", "lact-dict"}, {"nerfstudio", "nerfstudio"}, {"synthetic", "nerf-synthetic"}};
  std::vector<std::vector<float>> rays;
  for (const auto& [dir, layout] : layouts) {
    const std::vector<Scene> scenes = read_scenes((root / dir).string());
    ASSERT_EQ(scenes.size(), 1u);
    const Scene& scene = scenes[0];
    EXPECT_EQ(scene.layout, layout);
    ASSERT_EQ(scene.views.size(), 4u);
    std::vector<float> all;
    for (const SceneView& v : scene.views) {
      EXPECT_TRUE(fs::exists(v.image_path)) << v.image_path;
      std::vector<float> o, d;
      compute_rays(v.camera, kHeight, kWidth, o, d);
      all.insert(all.end(), o.begin(), o.end());
      all.insert(all.end(), d.begin(), d.end());
    }
    rays.push_back(all);
  }
  EXPECT_EQ(read_scenes((root / "dict").string())[0].name, "desk");
  for (size_t i = 1; i < rays.size(); ++i)
    EXPECT_LT(test::max_abs_error(rays[i], rays[0]), 1e-5) << layouts[i].first << " vs list";
}

// Long-LRM's k-means list names each input view once: a view listed twice would be encoded twice (as --inputs 0,0
// would) and is refused naming the file and the field.
TEST_F(FourLayouts, KmeansListWithAViewTwiceIsRefused) {
  json dict = json::parse(std::ifstream(root / "dict/opencv_cameras.json"));
  dict["fold_8_kmeans_2_input"] = {1, 3};
  std::ofstream(root / "dict/opencv_cameras.json") << dict.dump();
  EXPECT_EQ(read_scenes((root / "dict").string()).at(0).kmeans_inputs, (std::vector<int>{1, 3}));
  dict["fold_8_kmeans_2_input"] = {1, 1};
  std::ofstream(root / "dict/opencv_cameras.json") << dict.dump();
  const std::string e = test::error_of([&] { read_scenes((root / "dict").string()); });
  EXPECT_NE(e.find("opencv_cameras.json: field 'fold_8_kmeans_2_input' lists view 1 twice"), std::string::npos) << e;
}

// --downscale N reads images_N copies, which only images/ paths (nerfstudio/DL3DV, COLMAP) have. A LaCT camera file,
// NeRF-synthetic or a transforms.json naming files outside images/ is refused naming the flag and the first file
// (before, the flag was silently ignored and the full-size images were read).
TEST_F(FourLayouts, DownscaleOnlyWhereThereAreCopies) {
  ReadOptions half;
  half.downscale = 2;
  for (const char* dir : {"list", "dict", "synthetic", "nerfstudio"}) {
    const std::string e = test::error_of([&] { read_scenes((root / dir).string(), half); });
    EXPECT_NE(e.find("--downscale: 2: "), std::string::npos) << dir << ": " << e;
    EXPECT_NE(e.find("r_0.png, which is not under images/, so there is no images_2 copy"), std::string::npos) << e;
  }
  json ns = json::parse(std::ifstream(root / "nerfstudio/transforms.json"));
  fs::create_directories(root / "nerfstudio/images_2");
  for (int i = 0; i < 4; ++i) {
    const std::string file = "r_" + std::to_string(i) + ".png";
    ns["frames"][i]["file_path"] = "images/" + file;
    write_png((root / "nerfstudio/images_2" / file).string(),
              Image{kWidth / 2, kHeight / 2, std::vector<float>(kWidth * kHeight * 3 / 4, 0.25f)});
  }
  std::ofstream(root / "nerfstudio/transforms.json") << ns.dump();
  const Scene scene = read_scenes((root / "nerfstudio").string(), half).at(0);
  for (const SceneView& v : scene.views) {
    EXPECT_EQ(v.downscale, 2);
    EXPECT_NE(v.image_path.find("images_2/r_"), std::string::npos) << v.image_path;
  }
}

// A camera path's "format" is the one lact writes, or absent (written by hand); another version's is refused
// instead of being read as if it were v1.
// --data (or the camera file a folder is searched for) that is a loop of symbolic links or a dangling link is named
// as one. Before, a loop as --data was "no such file or folder", and a loop or dangling link named
// opencv_cameras.json / transforms_train.json inside the folder was "folder holds no opencv_cameras.json, ...".
TEST(ReadScenes, LinksThatLeadNowhereAreNamed) {
  const fs::path root = fs::temp_directory_path() / ("lact_links_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "loop");
  fs::create_directories(root / "dangling");
  fs::create_directories(root / "synthetic");
  fs::create_symlink("self", root / "self");
  fs::create_symlink("opencv_cameras.json", root / "loop" / "opencv_cameras.json");
  fs::create_symlink("gone.json", root / "dangling" / "transforms.json");
  fs::create_symlink("transforms_train.json", root / "synthetic" / "transforms_train.json");
  const std::pair<fs::path, std::string> cases[] = {
      {root / "self", (root / "self").string() + ": is a loop of symbolic links"},
      {root / "loop", (root / "loop" / "opencv_cameras.json").string() + ": is a loop of symbolic links"},
      {root / "dangling",
       (root / "dangling" / "transforms.json").string() + ": is a link to a missing file or folder (gone.json)"},
      {root / "synthetic", (root / "synthetic" / "transforms_train.json").string() + ": is a loop of symbolic links"},
      {root / "absent", (root / "absent").string() + ": no such file or folder"}};
  for (const auto& [path, expected] : cases) {
    const std::string e = test::error_of([&] { read_scenes(path.string()); });
    EXPECT_NE(e.find(expected), std::string::npos) << e;
  }
  fs::remove_all(root);
}

TEST(CameraPathFile, AnotherFormatIsRefused) {
  const fs::path path = fs::temp_directory_path() / ("lact_path_format_" + std::to_string(::getpid()) + ".json");
  Camera c;
  c.width = 48, c.height = 32, c.fx = c.fy = 40, c.cx = 24, c.cy = 16;
  c.c2w = look_at_origin(2, 0, 0);
  write_camera_path(path.string(), {c}, nullptr);
  EXPECT_EQ(read_camera_path(path.string()).size(), 1u);
  json file = json::parse(std::ifstream(path));
  file.erase("format");
  std::ofstream(path) << file.dump();
  EXPECT_EQ(read_camera_path(path.string()).size(), 1u);
  for (const json& format : {json("lact camera path v9"), json(9)}) {
    file["format"] = format;
    std::ofstream(path) << file.dump();
    const std::string e = test::error_of([&] { read_camera_path(path.string()); });
    EXPECT_NE(e.find(path.string() + ": field 'format' is " + (format.is_string() ? "'lact camera path v9'" : "9") +
                     ", not 'lact camera path v1'"),
              std::string::npos)
        << e;
  }
  fs::remove(path);
}

TEST(ViewSelection, SpecsWorkedOutByHand) {
  Scene scene;
  scene.source = "scene.json";
  for (int i = 0; i < 20; ++i) {
    SceneView v;
    v.camera.c2w = look_at_origin(std::cos(i * 0.3), std::sin(i * 0.3), 0.5);
    scene.views.push_back(v);
  }
  EXPECT_EQ(select_views("0,3-5,19", scene, false, {}, 0, "--inputs"), (std::vector<int>{0, 3, 4, 5, 19}));
  EXPECT_EQ(select_views("uniform:4", scene, false, {}, 0, "--inputs"), (std::vector<int>{0, 5, 10, 15}));
  EXPECT_EQ(select_views("fold8", scene, true, {}, 0, "--targets"), (std::vector<int>{0, 8, 16}));
  EXPECT_EQ(select_views("rest", scene, true, {0, 5, 10, 15}, 0, "--targets").size(), 16u);
  const auto r1 = select_views("random:6", scene, false, {}, 7, "--inputs");
  EXPECT_EQ(r1, select_views("random:6", scene, false, {}, 7, "--inputs"));  // a seed gives one draw
  EXPECT_EQ(std::set<int>(r1.begin(), r1.end()).size(), 6u);
  EXPECT_TRUE(std::is_sorted(r1.begin(), r1.end()));
  // k-means inputs avoid the fold-8 targets and are distinct.
  const auto k = select_views("fold8:5", scene, false, {}, 0, "--inputs");
  EXPECT_EQ(k.size(), 5u);
  for (int i : k) EXPECT_NE(i % 8, 0);
  scene.kmeans_inputs = {1, 2, 3};
  EXPECT_EQ(select_views("fold8", scene, false, {}, 0, "--inputs"), (std::vector<int>{1, 2, 3}));
  EXPECT_THROW(select_views("20", scene, false, {}, 0, "--inputs"), Error);
  EXPECT_THROW(select_views("uniform:21", scene, false, {}, 0, "--inputs"), Error);
  EXPECT_THROW(select_views("sideways", scene, false, {}, 0, "--inputs"), Error);
  // A view given twice (issue 36: --inputs 0,0,1 changed the result) is refused, in a list or by ranges.
  for (const char* twice : {"0,0,1", "0-3,2", "5,1-6"}) {
    try {
      select_views(twice, scene, false, {}, 0, "--inputs");
      ADD_FAILURE() << twice << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("twice"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--inputs"), std::string::npos) << e.what();
    }
  }
}

TEST(ViewSelection, KmeansFindsSeparatedClusters) {
  // Three tight groups of cameras: 3 clusters pick one view from each group.
  Scene scene;
  for (int g = 0; g < 3; ++g)
    for (int i = 0; i < 5; ++i) {
      SceneView v;
      v.camera.c2w = look_at_origin(10.0 * g + 0.01 * i, 1.0 + 0.01 * i, 0.5);
      scene.views.push_back(v);
    }
  std::vector<int> all(15);
  for (int i = 0; i < 15; ++i) all[i] = i;
  const auto picked = kmeans_views(scene, all, 3, 0);
  ASSERT_EQ(picked.size(), 3u);
  EXPECT_EQ(picked[0] / 5, 0);
  EXPECT_EQ(picked[1] / 5, 1);
  EXPECT_EQ(picked[2] / 5, 2);
}

TEST(PoseNormalization, MeanPoseAtOriginScaledAndInvariantToTheWorldFrame) {
  std::vector<Camera> cams;
  for (int i = 0; i < 6; ++i) {
    Camera c;
    c.c2w = look_at_origin(3 * std::cos(i), 3 * std::sin(i), 1.0 + 0.2 * i);
    cams.push_back(c);
  }
  const PoseTransform t = mean_pose_transform(cams);
  double centre[3] = {0, 0, 0}, forward[3] = {0, 0, 0}, largest = 0;
  std::vector<Camera> moved;
  for (const Camera& c : cams) {
    moved.push_back(apply_pose_transform(t, c));
    for (int a = 0; a < 3; ++a) {
      centre[a] += moved.back().c2w[a * 4 + 3] / 6;
      forward[a] += moved.back().c2w[a * 4 + 2] / 6;
      largest = std::max(largest, std::abs(moved.back().c2w[a * 4 + 3]));
    }
  }
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(centre[a], 0.0, 1e-12);
  EXPECT_NEAR(forward[0], 0.0, 1e-12);  // the mean forward axis is +z
  EXPECT_NEAR(forward[1], 0.0, 1e-12);
  EXPECT_GT(forward[2], 0.0);
  EXPECT_NEAR(largest, 1.0, 1e-12);
  // The same cameras in another world frame (rotation about x by 0.7 rad, then a shift) normalise the same.
  const double c = std::cos(0.7), s = std::sin(0.7);
  const std::array<double, 16> world{1, 0, 0, 5, 0, c, -s, -2, 0, s, c, 1, 0, 0, 0, 1};
  std::vector<Camera> other = cams;
  for (Camera& cam : other) cam.c2w = multiply4(world, cam.c2w);
  const PoseTransform t2 = mean_pose_transform(other);
  for (size_t i = 0; i < cams.size(); ++i) {
    const Camera a = apply_pose_transform(t2, other[i]);
    for (int j = 0; j < 16; ++j) EXPECT_NEAR(a.c2w[j], moved[i].c2w[j], 1e-10);
  }
}

// Cameras all around an object, looking in, have no mean pose: in a level ring their forward axes cancel out; in a
// ring above the object their mean forward axis is straight down, along their mean up axis. Each is one line that
// names the flag and says what to do (it said "the cameras' mean axes are degenerate").
TEST(PoseNormalization, CamerasAroundAnObjectAreRefusedSayingWhy) {
  auto ring = [](double height) {
    std::vector<Camera> cams(4);
    for (int i = 0; i < 4; ++i)
      cams[i].c2w = look_at_origin(3 * std::cos(i * M_PI / 2), 3 * std::sin(i * M_PI / 2), height);
    return cams;
  };
  auto refusal = [](const std::vector<Camera>& cams) {
    try {
      mean_pose_transform(cams);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string level = refusal(ring(0.0)), above = refusal(ring(1.5));
  EXPECT_NE(level.find("--normalize-poses"), std::string::npos) << level;
  EXPECT_NE(level.find("forward axes cancel out"), std::string::npos) << level;
  EXPECT_NE(above.find("mean forward axis is along their mean up axis"), std::string::npos) << above;
  EXPECT_NE(above.find("leave it off (none)"), std::string::npos) << above;
  std::vector<Camera> facing = ring(1.5);  // two cameras of the ring face one way: a mean pose
  facing.resize(2);
  EXPECT_EQ(refusal(facing), "accepted");
}

TEST(Preprocess, CoverCropIntrinsicsByHand) {
  Camera cam;
  cam.width = 512, cam.height = 512, cam.fx = 549, cam.fy = 549, cam.cx = 256, cam.cy = 256;
  // 512x512 -> 96x128 (HxW): scale 0.25, resized 128x128, crop 16 rows from the top.
  const CoverCrop c = cover_crop(cam, 96, 128);
  EXPECT_EQ(c.resized_width, 128);
  EXPECT_EQ(c.resized_height, 128);
  EXPECT_EQ(c.left, 0);
  EXPECT_EQ(c.top, 16);
  EXPECT_FLOAT_EQ(c.camera.fx, 549 * 0.25f);
  EXPECT_FLOAT_EQ(c.camera.cx, 64.0f);
  EXPECT_FLOAT_EQ(c.camera.cy, 64.0f - 16.0f);
  EXPECT_EQ(c.camera.width, 128);
  EXPECT_EQ(c.camera.height, 96);
}

TEST(Preprocess, ResizeKeepsConstantsAndRamps) {
  const fs::path dir = fs::temp_directory_path() / ("lact_resize_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const int w = 64, h = 48;
  Image ramp{w, h, std::vector<float>(w * h * 3)};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      ramp.rgb[(y * w + x) * 3 + 0] = 0.5f;
      ramp.rgb[(y * w + x) * 3 + 1] = x / float(w - 1);
      ramp.rgb[(y * w + x) * 3 + 2] = 0.2f;
    }
  write_png((dir / "ramp.png").string(), ramp);
  SceneView view;
  view.image_path = (dir / "ramp.png").string();
  view.camera.width = w, view.camera.height = h, view.camera.fx = view.camera.fy = 50;
  view.camera.cx = 32, view.camera.cy = 24;
  view.camera.c2w = look_at_origin(2, 0, 0);
  const PosedImage small = load_view(view, 24, 32, {1, 1, 1});  // exactly half
  double worst_constant = 0, worst_ramp = 0;
  for (int y = 0; y < 24; ++y)
    for (int x = 2; x < 30; ++x) {  // away from the clamped edges
      const float* p = small.image.rgb.data() + (y * 32 + x) * 3;
      worst_constant = std::max({worst_constant, std::abs(p[0] - 0.5), std::abs(p[2] - 0.2)});
      // Output pixel centre x+0.5 covers input x' = 2(x+0.5) - 0.5 (pixel-centre convention).
      worst_ramp = std::max(worst_ramp, std::abs(p[1] - (2.0 * (x + 0.5) - 0.5) / (w - 1)));
    }
  EXPECT_LT(worst_constant, 3.0 / 255);  // 8-bit PNG rounding
  EXPECT_LT(worst_ramp, 3.0 / 255);
  EXPECT_FLOAT_EQ(small.camera.fx, 25.0f);
  fs::remove_all(dir);
}

// A view whose camera is 48x32 (focal 40, centred), looking at the origin; no image yet.
SceneView view_of_a_48x32_camera() {
  SceneView view;
  view.camera.width = 48, view.camera.height = 32, view.camera.fx = view.camera.fy = 40;
  view.camera.cx = 24, view.camera.cy = 16;
  view.camera.c2w = look_at_origin(2, 0, 0);
  return view;
}

// An image smaller than its camera is read as a downscaled copy (intrinsics scaled) when it is at most 8 times
// smaller, or N times under --downscale N; a 3x2 image for a 48x32 camera (same aspect, 16 times smaller) is not a
// copy of what the camera saw and is refused naming the file and both sizes.
TEST(Preprocess, ImageFarSmallerThanItsCameraIsRefused) {
  const fs::path dir = fs::temp_directory_path() / ("lact_tiny_copy_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SceneView view = view_of_a_48x32_camera();
  for (int w : {48, 24, 6, 3}) {
    const int h = w * 2 / 3;
    write_png((dir / (std::to_string(w) + ".png")).string(), Image{w, h, std::vector<float>(w * h * 3, 0.5f)});
  }
  view.image_path = (dir / "6.png").string();  // 8 times smaller: a copy, intrinsics scaled by 1/8
  EXPECT_FLOAT_EQ(load_view(view, 32, 48, {1, 1, 1}).camera.fx, 40.0f);
  view.image_path = (dir / "3.png").string();
  const std::string e = test::error_of([&] { load_view(view, 32, 48, {1, 1, 1}); });
  EXPECT_NE(e.find(view.image_path + ": image is 2x3 but its camera is for 32x48: 16 times smaller"), std::string::npos)
      << e;
  view.downscale = 16;  // read from images_16 with --downscale 16: the copy is what was asked for
  EXPECT_FLOAT_EQ(load_view(view, 32, 48, {1, 1, 1}).camera.fx, 40.0f);
  fs::remove_all(dir);
}

// An image file larger than its camera is refused naming the file and both sizes, whatever the aspect: the memory
// check counts a view at its camera's size (before, a 384x576 file behind a 32x48 camera was read and its camera
// scaled up, 144 times the pixels the check had counted). The same file behind a camera of its size still reads.
TEST(Preprocess, ImageLargerThanItsCameraIsRefused) {
  const fs::path dir = fs::temp_directory_path() / ("lact_large_copy_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SceneView view = view_of_a_48x32_camera();
  for (const auto& [w, h] : {std::pair{576, 384}, std::pair{96, 64}, std::pair{48, 40}}) {
    view.image_path = (dir / (std::to_string(w) + "x" + std::to_string(h) + ".png")).string();
    write_png(view.image_path, Image{w, h, std::vector<float>(w * h * 3, 0.5f)});
    const std::string e = test::error_of([&] { load_view(view, 32, 48, {1, 1, 1}); });
    EXPECT_NE(e.find(view.image_path + ": image is " + std::to_string(h) + "x" + std::to_string(w) +
                     " but its camera is for 32x48: larger than its camera"),
              std::string::npos)
        << e;
  }
  view.camera.width = 96, view.camera.height = 64, view.camera.fx = view.camera.fy = 80;
  view.camera.cx = 48, view.camera.cy = 32;
  view.image_path = (dir / "96x64.png").string();
  EXPECT_FLOAT_EQ(load_view(view, 32, 48, {1, 1, 1}).camera.fx, 40.0f);  // its own camera, covered down to 32x48
  fs::remove_all(dir);
}

TEST(Preprocess, WorkingSizeErrors) {
  Scene scene;
  scene.source = "cams.json";
  SceneView a, b;
  a.camera.width = 48, a.camera.height = 32;
  b.camera.width = 64, b.camera.height = 32;
  scene.views = {a, b};
  EXPECT_EQ(working_size(scene, {0}, {}, 8), std::make_pair(32, 48));
  EXPECT_THROW(working_size(scene, {0, 1}, {}, 8), Error);  // different sizes, no --size
  ViewLoadOptions bad;
  bad.height = 30, bad.width = 44;
  EXPECT_THROW(working_size(scene, {0}, bad, 8), Error);
  scene.views[0].camera.width = 45;
  EXPECT_THROW(working_size(scene, {0}, {}, 8), Error);
}

// The camera bounds (core/camera.h): the edges themselves pass, just past them fails, and the inverse of a rigid
// pose is exact at the largest translation (a 4x4 elimination with a relative pivot threshold calls it singular).
TEST(CameraBounds, EdgesAndRigidInverse) {
  Camera c;
  c.width = 48, c.height = 32;
  c.c2w = look_at_origin(1e15, -3, 2);
  set_intrinsics(c, kMinFocalPixels, kMaxFocalPixels, -kMaxPrincipalPoint, kMaxPrincipalPoint, "edge");
  EXPECT_NO_THROW(c.validate("edge"));
  EXPECT_THROW(set_intrinsics(c, kMinFocalPixels * 0.99, 1, 0, 0, "x"), Error);
  EXPECT_THROW(set_intrinsics(c, 1, kMaxFocalPixels * 1.01, 0, 0, "x"), Error);
  EXPECT_THROW(set_intrinsics(c, 1, 1, kMaxPrincipalPoint * 1.01, 0, "x"), Error);
  EXPECT_THROW(set_intrinsics(c, 1, 1, 0, 1e300, "x"), Error);
  Camera far = c;
  far.c2w[3] = 1.01e15;
  EXPECT_THROW(far.validate("far"), Error);

  const std::array<double, 16> w2c = invert_rigid_pose(c.c2w);
  const std::array<double, 16> back = invert_rigid_pose(w2c);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(back[i], c.c2w[i], 1e-15 * std::max(1.0, std::abs(c.c2w[i]))) << i;
  const std::array<double, 16> identity = multiply4(w2c, c.c2w);
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(identity[r * 4 + k], r == k ? 1.0 : 0.0, 1e-12);

  // Within kRotationTolerance passes; a scale, shear or mirror past it fails, as does a last row not 0 0 0 1.
  auto scaled_column = [&](int column, double factor) {
    std::array<double, 16> m = c.c2w;
    for (int r = 0; r < 3; ++r) m[r * 4 + column] *= factor;
    return m;
  };
  EXPECT_NO_THROW(check_rigid_pose(scaled_column(0, 1 + 2e-4), "x", "pose"));
  EXPECT_THROW(check_rigid_pose(scaled_column(0, 1.1), "x", "pose"), Error);
  std::array<double, 16> sheared = c.c2w, last_row = c.c2w;
  for (int r = 0; r < 3; ++r) sheared[r * 4 + 1] += 0.2 * c.c2w[r * 4];
  last_row[15] = 1.01;
  EXPECT_THROW(check_rigid_pose(sheared, "x", "pose"), Error);
  EXPECT_THROW(check_rigid_pose(last_row, "x", "pose"), Error);
  std::array<double, 16> mirrored = c.c2w;
  for (int r = 0; r < 3; ++r) mirrored[r * 4] = -mirrored[r * 4];
  EXPECT_THROW(check_rigid_pose(mirrored, "x", "pose"), Error);
}

}  // namespace
}  // namespace lact
