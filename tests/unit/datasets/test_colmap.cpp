// COLMAP sparse models (datasets/colmap_model.cpp, datasets/colmap_layout.cpp): poses against rotations worked
// out by hand, every supported camera model's intrinsics and distortion, binary = text, image folder resolution,
// one-line errors for malformed files, and the same rays (double precision) and pixels as the LaCT layout on
// the example scene and the shared real desk scene.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/tokens.h"
#include "datasets/colmap_model.h"
#include "datasets/image_io.h"
#include "datasets/json_util.h"
#include "datasets/pose_normalization.h"
#include "datasets/preprocess.h"
#include "datasets/scene.h"
#include "datasets/undistort.h"
#include "system/error.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

namespace fs = std::filesystem;
using test::error_of;

fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("lact_colmap_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Little-endian binary records, as COLMAP writes them.
struct Bytes {
  std::string data;
  template <typename T>
  Bytes& put(T value) {
    char raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    data.append(raw, sizeof(T));  // the test hosts are little-endian (x86-64, arm64)
    return *this;
  }
  Bytes& name(const std::string& s) {
    data.append(s);
    data.push_back('\0');
    return *this;
  }
};

struct TestCamera {
  uint32_t id;
  int model;
  uint64_t width, height;
  std::vector<double> params;
};
struct TestImage {
  uint32_t id;
  std::array<double, 4> q;
  std::array<double, 3> t;
  uint32_t camera;
  std::string name;
};

std::string cameras_bin(const std::vector<TestCamera>& cameras) {
  Bytes b;
  b.put<uint64_t>(cameras.size());
  for (const TestCamera& c : cameras) {
    b.put<uint32_t>(c.id).put<int32_t>(c.model).put<uint64_t>(c.width).put<uint64_t>(c.height);
    for (double p : c.params) b.put<double>(p);
  }
  return b.data;
}

std::string images_bin(const std::vector<TestImage>& images, uint64_t points = 0) {
  Bytes b;
  b.put<uint64_t>(images.size());
  for (const TestImage& im : images) {
    b.put<uint32_t>(im.id);
    for (double v : im.q) b.put<double>(v);
    for (double v : im.t) b.put<double>(v);
    b.put<uint32_t>(im.camera).name(im.name).put<uint64_t>(points);
    for (uint64_t p = 0; p < points; ++p) b.put<double>(1.5).put<double>(2.5).put<int64_t>(-1);
  }
  return b.data;
}

std::string number(double v) {
  char s[40];
  std::snprintf(s, sizeof(s), "%.17g", v);
  return s;
}

std::string cameras_txt(const std::vector<TestCamera>& cameras) {
  std::string s = "# Camera list with one line of data per camera:\n#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]\n";
  for (const TestCamera& c : cameras) {
    s += std::to_string(c.id) + " " + colmap_model_name(c.model) + " " + std::to_string(c.width) + " " +
         std::to_string(c.height);
    for (double p : c.params) s += " " + number(p);
    s += "\n";
  }
  return s;
}

std::string images_txt(const std::vector<TestImage>& images) {
  std::string s = "# Image list with two lines of data per image:\n";
  for (const TestImage& im : images) {
    s += std::to_string(im.id);
    for (double v : im.q) s += " " + number(v);
    for (double v : im.t) s += " " + number(v);
    s += " " + std::to_string(im.camera) + " " + im.name + "\n" + (im.id % 2 ? "" : "10.5 20.25 -1 3 4 7") + "\n";
  }
  return s;
}

// root/sparse/0/{cameras,images}.{bin|txt} and an empty root/images/.
void write_model(const fs::path& root, const std::vector<TestCamera>& cameras, const std::vector<TestImage>& images,
                 bool binary) {
  const fs::path sparse = root / "sparse" / "0";
  if (binary) {
    write_text(sparse / "cameras.bin", cameras_bin(cameras));
    write_text(sparse / "images.bin", images_bin(images));
  } else {
    write_text(sparse / "cameras.txt", cameras_txt(cameras));
    write_text(sparse / "images.txt", images_txt(images));
  }
  fs::create_directories(root / "images");
}

const Scene read_one(const fs::path& path, const ReadOptions& options = {}) {
  const std::vector<Scene> scenes = read_scenes(path.string(), options);
  EXPECT_EQ(scenes.size(), 1u);
  return scenes.at(0);
}

void expect_c2w(const Camera& c, const std::array<double, 12>& expected, const std::string& what) {
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(c.c2w[i], expected[i], 1e-15) << what << " entry " << i;
  EXPECT_EQ(c.c2w[12], 0.0);
  EXPECT_EQ(c.c2w[15], 1.0);
}

TEST(ColmapModel, PosesWorkedOutByHand) {
  const double h = std::sqrt(0.5);
  const std::vector<TestCamera> cameras = {{7, 1, 40, 30, {50, 52, 20, 15}}};
  // File order b, c, a: views come sorted by name.
  const std::vector<TestImage> images = {
      // q = (1/2)(1, 1, 1, 1): 120 degrees about (1,1,1); R = [[0,0,1],[1,0,0],[0,1,0]] (x -> y -> z -> x).
      {3, {0.5, 0.5, 0.5, 0.5}, {1, 2, 3}, 7, "b.png"},
      // q = (2, 0, 0, 0): not unit, normalised to the identity; centre = -t.
      {1, {2, 0, 0, 0}, {0.5, -1, 4}, 7, "c.png"},
      // q = (cos 45, 0, 0, sin 45): 90 degrees about z; R = [[0,-1,0],[1,0,0],[0,0,1]].
      {9, {h, 0, 0, h}, {1, 0, 0}, 7, "a.png"},
  };
  for (bool binary : {true, false}) {
    const fs::path root = fresh_folder(binary ? "hand_bin" : "hand_txt");
    write_model(root, cameras, images, binary);
    const Scene scene = read_one(root);
    EXPECT_EQ(scene.layout, "colmap");
    EXPECT_EQ(scene.name, root.filename().string());
    ASSERT_EQ(scene.views.size(), 3u);
    EXPECT_EQ(fs::path(scene.views[0].image_path), root / "images" / "a.png");
    EXPECT_EQ(fs::path(scene.views[2].image_path), root / "images" / "c.png");
    // c2w = [R^T | -R^T t].
    expect_c2w(scene.views[0].camera, {0, 1, 0, 0, -1, 0, 0, 1, 0, 0, 1, 0}, "a.png");
    expect_c2w(scene.views[1].camera, {0, 1, 0, -2, 0, 0, 1, -3, 1, 0, 0, -1}, "b.png");
    expect_c2w(scene.views[2].camera, {1, 0, 0, -0.5, 0, 1, 0, 1, 0, 0, 1, -4}, "c.png");
    const Camera& c = scene.views[1].camera;
    EXPECT_EQ(c.width, 40);
    EXPECT_EQ(c.height, 30);
    EXPECT_EQ(c.fx, 50.0f);
    EXPECT_EQ(c.fy, 52.0f);
    EXPECT_EQ(c.cx, 20.0f);
    EXPECT_EQ(c.cy, 15.0f);
    EXPECT_FALSE(scene.views[1].distortion.any());
    ASSERT_EQ(scene.notes.size(), 2u);
    EXPECT_NE(scene.notes[0].find(binary ? "(binary): 1 camera(s) in use: 1 PINHOLE"
                                         : "(text): 1 camera(s) in use: 1 PINHOLE"),
              std::string::npos)
        << scene.notes[0];
    EXPECT_NE(scene.notes[1].find("3 registered, 0 unregistered"), std::string::npos) << scene.notes[1];
    EXPECT_NE(scene.notes[1].find("3 registered image(s) missing there"), std::string::npos) << scene.notes[1];
    fs::remove_all(root);
  }
}

// One camera of each model COLMAP defines, with an image each: the intrinsics and distortion lact takes.
TEST(ColmapModel, EverySupportedCameraModel) {
  const std::vector<TestCamera> cameras = {
      {1, 0, 64, 48, {60, 31, 23}},                                            // SIMPLE_PINHOLE f cx cy
      {2, 1, 64, 48, {60, 61, 31, 23}},                                        // PINHOLE
      {3, 2, 64, 48, {60, 31, 23, -0.05}},                                     // SIMPLE_RADIAL k
      {4, 3, 64, 48, {60, 31, 23, -0.05, 0.01}},                               // RADIAL k1 k2
      {5, 4, 64, 48, {60, 61, 31, 23, -0.05, 0.01, 1e-3, -2e-3}},              // OPENCV
      {6, 6, 64, 48, {60, 61, 31, 23, -0.05, 0.01, 1e-3, -2e-3, 0, 0, 0, 0}},  // FULL_OPENCV, k3..k6 = 0
  };
  std::vector<TestImage> images;
  for (uint32_t i = 1; i <= 6; ++i) images.push_back({i, {1, 0, 0, 0}, {0, 0, 0}, i, "v" + std::to_string(i) + ".png"});
  const fs::path root = fresh_folder("models");
  write_model(root, cameras, images, true);
  const Scene scene = read_one(root);
  ASSERT_EQ(scene.views.size(), 6u);
  const SceneView* v = scene.views.data();
  EXPECT_TRUE(v[0].camera.fx == 60.0f && v[0].camera.fy == 60.0f && v[0].camera.cx == 31.0f && v[0].camera.cy == 23.0f);
  EXPECT_TRUE(v[1].camera.fx == 60.0f && v[1].camera.fy == 61.0f && v[1].camera.cx == 31.0f && v[1].camera.cy == 23.0f);
  EXPECT_FALSE(v[0].distortion.any() || v[1].distortion.any());
  EXPECT_EQ(v[2].distortion.k1, -0.05);
  EXPECT_EQ(v[2].distortion.k2, 0.0);
  EXPECT_EQ(v[3].distortion.k2, 0.01);
  EXPECT_EQ(v[4].distortion.p1, 1e-3);
  EXPECT_EQ(v[4].distortion.p2, -2e-3);
  EXPECT_EQ(v[2].distorted_camera.fx, 60.0f);
  EXPECT_EQ(v[4].distorted_camera.fy, 61.0f);
  // The distorted ones get the undistorted pinhole intrinsics (undistorted_camera), which FULL_OPENCV with zero
  // rational terms shares with OPENCV exactly.
  const Camera expected = undistorted_camera(v[4].distorted_camera, v[4].distortion);
  EXPECT_EQ(v[4].camera.fx, expected.fx);
  EXPECT_EQ(v[4].camera.cx, expected.cx);
  EXPECT_TRUE(v[5].camera.fx == v[4].camera.fx && v[5].camera.fy == v[4].camera.fy &&
              v[5].camera.cx == v[4].camera.cx && v[5].camera.cy == v[4].camera.cy);
  EXPECT_NE(scene.notes[0].find("6 camera(s) in use: 1 FULL_OPENCV, 1 OPENCV, 1 PINHOLE, 1 RADIAL, 1 SIMPLE_PINHOLE, "
                                "1 SIMPLE_RADIAL"),
            std::string::npos)
      << scene.notes[0];
  fs::remove_all(root);
}

// FULL_OPENCV's rational radial terms: the forward model against the formula by hand, and its inverse.
TEST(ColmapModel, FullOpencvRationalDistortion) {
  LensDistortion d;
  d.k1 = -0.1, d.k2 = 0.02, d.p1 = 1e-3, d.p2 = -5e-4, d.k3 = 0.003, d.k4 = 0.05, d.k5 = -0.01, d.k6 = 0.002;
  const double x = 0.3, y = -0.2, r2 = x * x + y * y;
  const double radial =
      (1 - 0.1 * r2 + 0.02 * r2 * r2 + 0.003 * r2 * r2 * r2) / (1 + 0.05 * r2 - 0.01 * r2 * r2 + 0.002 * r2 * r2 * r2);
  double xd, yd;
  distort_normalized(d, x, y, xd, yd);
  EXPECT_NEAR(xd, x * radial + 2 * 1e-3 * x * y - 5e-4 * (r2 + 2 * x * x), 1e-15);
  EXPECT_NEAR(yd, y * radial + 1e-3 * (r2 + 2 * y * y) + 2 * -5e-4 * x * y, 1e-15);
  double ux, uy;
  ASSERT_TRUE(undistort_normalized(d, xd, yd, ux, uy));
  EXPECT_NEAR(ux, x, 1e-12);
  EXPECT_NEAR(uy, y, 1e-12);
}

TEST(ColmapModel, FovAndThinPrismModelsRefusedNamingTheModel) {
  const std::vector<std::pair<int, std::string>> refused = {
      {7, "FOV"}, {10, "THIN_PRISM_FISHEYE"}, {11, "RAD_TAN_THIN_PRISM_FISHEYE"}};
  for (const auto& [id, name] : refused) {
    const fs::path root = fresh_folder("fisheye");
    std::vector<double> params(colmap_model_param_count(id), 0.0);
    params[0] = 50, params[1] = 50, params[2] = 20;
    write_model(root, {{1, id, 40, 30, params}}, {{1, {1, 0, 0, 0}, {0, 0, 0}, 1, "a.png"}}, true);
    const std::string error = error_of([&] { read_one(root); });
    EXPECT_NE(error.find("cameras.bin"), std::string::npos) << error;
    EXPECT_NE(error.find("camera 1 uses the " + name + " model"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    fs::remove_all(root);
  }
  // A camera lact does not read that no registered image uses is no obstacle.
  const fs::path root = fresh_folder("unused_fov");
  write_model(root, {{1, 1, 40, 30, {50, 50, 20, 15}}, {2, 7, 40, 30, {50, 50, 20, 15, 0.5}}},
              {{1, {1, 0, 0, 0}, {0, 0, 0}, 1, "a.png"}}, true);
  EXPECT_NE(read_one(root).notes[0].find("(1 more no registered image uses)"), std::string::npos);
  fs::remove_all(root);
}

// COLMAP's fisheyes (src/colmap/sensor/models.h): OPENCV_FISHEYE fx fy cx cy k1 k2 k3 k4, SIMPLE_RADIAL_FISHEYE
// f cx cy k, RADIAL_FISHEYE f cx cy k1 k2, all theta_d = theta (1 + k1 theta^2 + ...): read as that lens and
// undistorted to the pinhole camera undistorted_camera gives for it.
TEST(ColmapModel, FisheyeModelsAreReadAndUndistorted) {
  struct Case {
    int id;
    std::vector<double> params;
    double fx, fy, cx, cy, k1, k2, k3, k4;
  };
  const Case cases[] = {
      {5, {42, 43, 20.5, 15.5, 0.02, -0.005, 0.001, -2e-4}, 42, 43, 20.5, 15.5, 0.02, -0.005, 0.001, -2e-4},
      {8, {42, 20.5, 15.5, 0.03}, 42, 42, 20.5, 15.5, 0.03, 0, 0, 0},
      {9, {42, 20.5, 15.5, 0.03, -0.01}, 42, 42, 20.5, 15.5, 0.03, -0.01, 0, 0}};
  for (const Case& c : cases) {
    const fs::path root = fresh_folder("fisheye_read");
    write_model(root, {{1, c.id, 40, 30, c.params}}, {{1, {1, 0, 0, 0}, {0, 0, 0}, 1, "a.png"}}, true);
    const SceneView view = read_one(root).views.at(0);
    const LensDistortion& d = view.distortion;
    EXPECT_TRUE(d.fisheye) << c.id;
    EXPECT_EQ(std::vector<double>({d.k1, d.k2, d.k3, d.k4, d.p1, d.p2, d.k5, d.k6}),
              std::vector<double>({c.k1, c.k2, c.k3, c.k4, 0, 0, 0, 0}))
        << c.id;
    const Camera& lens = view.distorted_camera;
    EXPECT_EQ(std::vector<float>({lens.fx, lens.fy, lens.cx, lens.cy}),
              std::vector<float>({float(c.fx), float(c.fy), float(c.cx), float(c.cy)}))
        << c.id;
    const Camera pinhole = undistorted_camera(lens, d);
    EXPECT_EQ(std::vector<float>({view.camera.fx, view.camera.fy, view.camera.cx, view.camera.cy}),
              std::vector<float>({pinhole.fx, pinhole.fy, pinhole.cx, pinhole.cy}))
        << c.id;
    EXPECT_LT(pinhole.fx, lens.fx) << c.id;  // a fisheye's pinhole view is narrower in focal length
    fs::remove_all(root);
  }
}

// RADIAL k1 = 1e6 (a unit mistake) still inverts, but undistorted it would magnify the image centre ~60 times
// (fx 40 -> ~2400): a few source pixels spread over the whole view. Refused naming the file and the camera; a
// realistic barrel distortion of the same camera reads.
TEST(ColmapModel, ImplausibleDistortionRefusedNamingTheCamera) {
  const fs::path root = fresh_folder("radial");
  write_model(root, {{1, 3, 48, 32, {40, 24, 16, 1e6, 0}}}, {{1, {1, 0, 0, 0}, {0, 0, 0}, 1, "a.png"}}, true);
  const std::string error = error_of([&] { read_one(root); });
  EXPECT_NE(error.find("cameras.bin camera 1: lens distortion changes the focal length"), std::string::npos) << error;
  write_model(root, {{1, 3, 48, 32, {40, 24, 16, -0.1, 0.01}}}, {{1, {1, 0, 0, 0}, {0, 0, 0}, 1, "a.png"}}, true);
  EXPECT_TRUE(read_one(root).views.at(0).distortion.any());
  fs::remove_all(root);
}

TEST(ColmapModel, BinaryAndTextGiveTheSameScene) {
  const std::vector<TestCamera> cameras = {{3, 4, 48, 32, {41.5, 42, 24.25, 15.5, -0.1, 0.02, 1e-3, -4e-4}},
                                           {8, 0, 64, 48, {55.125, 32, 24}}};
  std::vector<TestImage> images;
  for (uint32_t i = 0; i < 5; ++i) {
    const double a = 0.3 + 0.7 * i;
    images.push_back({10 + i,
                      {std::cos(a), 0.1 * i, std::sin(a), -0.2},
                      {0.1 * i, -1.0 / 3, 2.5 + i},
                      i % 2 ? 8u : 3u,
                      "img_" + std::to_string(4 - i) + ".jpg"});
  }
  const fs::path bin = fresh_folder("same_bin"), txt = fresh_folder("same_txt");
  write_model(bin, cameras, images, true);
  write_model(txt, cameras, images, false);
  const Scene a = read_one(bin), b = read_one(txt);
  ASSERT_EQ(a.views.size(), 5u);
  ASSERT_EQ(b.views.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(fs::path(a.views[i].image_path).filename(), fs::path(b.views[i].image_path).filename());
    EXPECT_EQ(a.views[i].camera.c2w, b.views[i].camera.c2w) << i;  // %.17g text round-trips every double
    EXPECT_EQ(a.views[i].camera.fx, b.views[i].camera.fx);
    EXPECT_EQ(a.views[i].camera.cx, b.views[i].camera.cx);
    EXPECT_EQ(a.views[i].camera.width, b.views[i].camera.width);
    EXPECT_EQ(a.views[i].distortion.k1, b.views[i].distortion.k1);
  }
  EXPECT_EQ(fs::path(a.views[0].image_path).filename(), "img_0.jpg");
  EXPECT_EQ(a.views[1].camera.width, 64);  // img_1 is image 13: camera 8
  fs::remove_all(bin);
  fs::remove_all(txt);
}

TEST(ColmapLayout, ImageFolderResolution) {
  const fs::path root = fresh_folder("folders");
  write_model(root, {{1, 1, 40, 30, {50, 50, 20, 15}}}, {{1, {1, 0, 0, 0}, {0, 0, 0}, 1, "sub/a.png"}}, true);
  Image img{40, 30, std::vector<float>(40 * 30 * 3, 0.5f)};
  fs::create_directories(root / "images" / "sub");
  write_png((root / "images" / "sub" / "a.png").string(), img);
  write_png((root / "images" / "extra.png").string(), img);   // not registered
  write_text(root / "images" / "notes.txt", "not an image");  // not counted
  const Scene scene = read_one(root);
  EXPECT_EQ(fs::path(scene.views[0].image_path), root / "images" / "sub" / "a.png");
  EXPECT_NE(scene.notes[1].find("1 registered, 1 unregistered"), std::string::npos) << scene.notes[1];
  EXPECT_EQ(scene.notes[1].find("missing"), std::string::npos) << scene.notes[1];
  // The model folder itself, a model file, or sparse/0 with an images folder elsewhere.
  EXPECT_EQ(read_one(root / "sparse" / "0").views[0].image_path, scene.views[0].image_path);
  EXPECT_EQ(read_one(root / "sparse" / "0" / "images.bin").views[0].image_path, scene.views[0].image_path);
  ReadOptions other;
  other.images = (root / "elsewhere").string();
  fs::create_directories(other.images);
  EXPECT_EQ(fs::path(read_one(root / "sparse" / "0", other).views[0].image_path), root / "elsewhere" / "sub" / "a.png");
  // --downscale N reads images_N; the camera stays at the stated size (scaled when the image is decoded).
  ReadOptions half;
  half.downscale = 2;
  EXPECT_NE(error_of([&] { read_one(root, half); }).find("without an images_2/ folder"), std::string::npos);
  fs::create_directories(root / "images_2" / "sub");
  write_png((root / "images_2" / "sub" / "a.png").string(), Image{20, 15, std::vector<float>(20 * 15 * 3, 0.5f)});
  const Scene small = read_one(root, half);
  EXPECT_EQ(fs::path(small.views[0].image_path), root / "images_2" / "sub" / "a.png");
  EXPECT_EQ(small.views[0].camera.width, 40);
  const PosedImage loaded = load_view(small.views[0], 16, 24, {1, 1, 1});
  EXPECT_FLOAT_EQ(loaded.camera.fx, 50.0f * 0.5f * (24.0f / 20.0f));
  ReadOptions both = half;
  both.images = other.images;
  EXPECT_NE(error_of([&] { read_one(root, both); }).find("--images"), std::string::npos);
  // --images on another layout is refused.
  ReadOptions images_only;
  images_only.images = other.images;
  EXPECT_NE(error_of([&] {
              read_scenes(std::string(LACT_TEST_DATA_DIR) + "/../../examples/gso_toy_64", images_only);
            }).find("--images: applies to COLMAP models only"),
            std::string::npos);
  fs::remove_all(root);
}

// --- malformed files: one line naming the file, the record and the field ------------------------------------------

struct Malformed {
  fs::path root = fresh_folder("malformed");
  std::vector<TestCamera> cameras = {{1, 1, 40, 30, {50, 50, 20, 15}}, {2, 4, 40, 30, {50, 50, 20, 15, 0.1, 0, 0, 0}}};
  std::vector<TestImage> images = {{1, {1, 0, 0, 0}, {0, 0, 1}, 1, "a.png"}, {2, {0, 1, 0, 0}, {0, 0, 2}, 2, "b.png"}};
  ~Malformed() { fs::remove_all(root); }
  // The error reading the model after `edit` changed the file `file` (cameras.bin, images.txt, ...).
  std::string error(bool binary, const std::string& file, const std::function<void(std::string&)>& edit) {
    write_model(root, cameras, images, binary);
    const fs::path path = root / "sparse" / "0" / file;
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    edit(bytes);
    write_text(path, bytes);
    const std::string e = error_of([&] { read_scenes(root.string()); });
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e.find(path.string()), std::string::npos) << e;
    return e;
  }
};

void put_u64(std::string& bytes, size_t at, uint64_t v) { std::memcpy(&bytes[at], &v, 8); }
void put_f64(std::string& bytes, size_t at, double v) { std::memcpy(&bytes[at], &v, 8); }
void put_i32(std::string& bytes, size_t at, int32_t v) { std::memcpy(&bytes[at], &v, 4); }

#define EXPECT_HAS(text, needle) EXPECT_NE((text).find(needle), std::string::npos) << (text)

TEST(ColmapModel, MalformedBinaryFiles) {
  Malformed m;
  // Counts that lie: more cameras / images than the bytes can hold (checked before allocating), or fewer.
  EXPECT_HAS(m.error(true, "cameras.bin", [](std::string& b) { put_u64(b, 0, 1000); }),
             "the camera count 1000 cannot fit in the");
  EXPECT_HAS(m.error(true, "images.bin", [](std::string& b) { put_u64(b, 0, uint64_t{1} << 60); }),
             "the image count 1152921504606846976 cannot fit");
  EXPECT_HAS(m.error(true, "images.bin", [](std::string& b) { put_u64(b, 0, 1); }),
             "bytes follow the last of the 1 images the count states");
  // num_points2D of image record 0 sits after id, 7 doubles, camera id and "a.png\0".
  EXPECT_HAS(m.error(true, "images.bin", [](std::string& b) { put_u64(b, 8 + 4 + 56 + 4 + 6, 1u << 30); }),
             "image record 0 of 2 ('a.png'): field 'num_points2D' is 1073741824 (24 bytes each) but only");
  // Truncated records.
  // Truncated records: record 1's name cut after 10 bytes (a long name, so the count check lets it through).
  m.images[1].name = "b_with_a_long_name.png";
  EXPECT_HAS(m.error(true, "images.bin", [](std::string& b) { b.resize(8 + 78 + 64 + 10); }),
             "image record 1 of 2: field 'name' is truncated (the file ends at byte 160)");
  m.images[1].name = "b.png";
  EXPECT_HAS(m.error(true, "cameras.bin", [](std::string& b) { b.resize(b.size() - 3); }),
             "camera record 1 of 2: field 'params' is truncated");
  EXPECT_HAS(m.error(true, "cameras.bin", [](std::string& b) { b.resize(4); }), "the camera count is truncated");
  // Unknown model ids, sizes, non-finite numbers.
  EXPECT_HAS(m.error(true, "cameras.bin", [](std::string& b) { put_i32(b, 8 + 4, 42); }),
             "camera record 0 of 2 (camera 1): unknown camera model id 42");
  EXPECT_HAS(m.error(true, "cameras.bin", [](std::string& b) { put_i32(b, 8 + 4, -1); }), "unknown camera model id -1");
  EXPECT_HAS(m.error(true, "cameras.bin", [](std::string& b) { put_u64(b, 8 + 8, 0); }),
             "camera record 0 of 2: field 'width' is 0, outside 1..65536");
  EXPECT_HAS(m.error(true, "cameras.bin", [](std::string& b) { put_f64(b, 8 + 24, std::nan("")); }),
             "camera record 0 of 2: field 'params' holds NaN or infinity");
  EXPECT_HAS(m.error(true, "images.bin", [](std::string& b) { put_f64(b, 8 + 4 + 8, std::nan("")); }),
             "image record 0 of 2 ('a.png'): field 'qvec' holds NaN or infinity");
  EXPECT_HAS(m.error(true, "images.bin",
                     [](std::string& b) { put_f64(b, 8 + 4 + 40, std::numeric_limits<double>::infinity()); }),
             "field 'tvec' holds NaN or infinity");
  EXPECT_HAS(m.error(true, "images.bin", [](std::string& b) { put_f64(b, 8 + 4, 0.0); }),
             "image 1 ('a.png'): quaternion (qw qx qy qz) is zero");
  // References and duplicates.
  m.images[1].camera = 5;
  EXPECT_HAS(m.error(true, "images.bin", [](std::string&) {}),
             "image 2 ('b.png') refers to camera 5, which cameras.bin does not hold");
  m.images[1].camera = 2, m.images[1].name = "a.png";
  EXPECT_HAS(m.error(true, "images.bin", [](std::string&) {}),
             "image record 1 of 2 ('a.png'): image name 'a.png' appears twice");
  m.images.clear();
  EXPECT_HAS(m.error(true, "images.bin", [](std::string&) {}), "the model has no registered images");
}

TEST(ColmapModel, MalformedTextFiles) {
  Malformed m;
  auto replace = [](const std::string& from, const std::string& to) {
    return [from, to](std::string& t) {
      const size_t at = t.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      t.replace(at, from.size(), to);
    };
  };
  EXPECT_HAS(m.error(false, "images.txt", replace("1 1 0 0 0 ", "1 abc 0 0 0 ")),
             "line 2: field 'QW' is 'abc', not a number");
  EXPECT_HAS(m.error(false, "images.txt", replace("1 1 0 0 0 ", "1 nan 0 0 0 ")),
             "line 2: field 'QW' holds NaN or infinity");
  EXPECT_HAS(m.error(false, "images.txt", replace(" a.png\n\n", " a.png\n")),
             "line 3: expected the 2D points of image 'a.png'");
  EXPECT_HAS(m.error(false, "images.txt", replace(" 1 a.png", " a.png")),
             "expected IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME");
  EXPECT_HAS(m.error(false, "cameras.txt", replace("1 PINHOLE 40 30 50 50 20 15", "1 PINHOLE 40 30 50 50 20")),
             "line 3: camera 1: model PINHOLE has 4 params, the line has 3");
  EXPECT_HAS(m.error(false, "cameras.txt", replace("1 PINHOLE", "1 FISHY")), "camera 1: unknown camera model 'FISHY'");
  EXPECT_HAS(m.error(false, "cameras.txt", replace("1 PINHOLE 40", "1 PINHOLE -40")),
             "field 'WIDTH' is '-40', not an integer");
  EXPECT_HAS(m.error(false, "cameras.txt", replace("2 OPENCV", "1 OPENCV")), "camera 1 appears twice");
  // A NUL byte inside a field: strtod stopped there ("1\0junk" read as 1), and a message quoting the field ended
  // there. Refused naming the field; the line holds no NUL.
  const std::pair<const char*, std::string> nul_cases[] = {
      {"images.txt", "line 2: field 'QW' holds a NUL byte"},
      {"images.txt", "line 2: field 'NAME' holds a NUL byte"},
      {"cameras.txt", "line 3: field 'PARAMS' holds a NUL byte"},
  };
  const std::function<void(std::string&)> nul_edits[] = {
      replace("1 1 0 0 0 ", std::string("1 1\0junk 0 0 0 ", 15)),
      replace(" a.png", std::string(" a\0.png", 7)),
      replace("1 PINHOLE 40 30 50 50", std::string("1 PINHOLE 40 30 50\0 50", 23)),
  };
  for (int i = 0; i < 3; ++i) {
    const std::string e = m.error(false, nul_cases[i].first, nul_edits[i]);
    EXPECT_HAS(e, nul_cases[i].second);
    EXPECT_EQ(e.find('\0'), std::string::npos) << e;
  }
}

// Model files that are not regular files are named for what they are, from stat() alone (a FIFO is never opened:
// the read would block), instead of the folder being reported as holding no COLMAP model.
TEST(ColmapModel, SpecialModelFilesAreNamedForWhatTheyAre) {
  Malformed m;
  const fs::path model = m.root / "sparse" / "0";
  auto error_with = [&](bool binary, const std::string& file, const std::function<void(const fs::path&)>& make,
                        const fs::path& read = {}) {
    fs::remove_all(model);
    write_model(m.root, m.cameras, m.images, binary);
    const fs::path path = model / file;
    fs::remove(path);
    make(path);
    const std::string e = error_of([&] { read_scenes((read.empty() ? m.root : read).string()); });
    EXPECT_EQ(e.find("holds no"), std::string::npos) << e;
    EXPECT_HAS(e, path.string() + ": is ");
    return e;
  };
  const auto fifo = [](const fs::path& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); };
  EXPECT_HAS(error_with(true, "cameras.bin", fifo), "is a FIFO (named pipe), not a COLMAP model file");
  EXPECT_HAS(error_with(false, "images.txt", fifo), "is a FIFO (named pipe)");
  EXPECT_HAS(error_with(true, "cameras.bin", fifo, model / "images.bin"), "is a FIFO (named pipe)");
  EXPECT_HAS(error_with(true, "cameras.bin", [](const fs::path& p) { fs::create_symlink("/dev/zero", p); }),
             "is a character device (through a symbolic link)");
  EXPECT_HAS(error_with(true, "cameras.bin", [](const fs::path& p) { fs::create_symlink(p.filename(), p); }),
             "is a loop of symbolic links");
  EXPECT_HAS(error_with(true, "images.bin", [](const fs::path& p) { fs::create_symlink("gone.bin", p); }),
             "is a symbolic link to a missing file");
  EXPECT_HAS(error_with(true, "images.bin", [](const fs::path& p) { fs::create_directory(p); }), "is a folder");
  fs::remove_all(model);
  write_model(m.root, m.cameras, m.images, true);  // the same folder with regular files reads
  EXPECT_EQ(read_one(m.root).views.size(), 2u);
}

// --- the same scene in the LaCT layout and as a COLMAP model ------------------------------------------------------

// (qw, qx, qy, qz) of a rotation matrix (rows), largest-diagonal method, qw >= 0.
std::array<double, 4> quaternion_of(const double r[3][3]) {
  const double trace = r[0][0] + r[1][1] + r[2][2];
  std::array<double, 4> q;
  if (trace > 0) {
    const double s = 2 * std::sqrt(1 + trace);
    q = {0.25 * s, (r[2][1] - r[1][2]) / s, (r[0][2] - r[2][0]) / s, (r[1][0] - r[0][1]) / s};
  } else if (r[0][0] > r[1][1] && r[0][0] > r[2][2]) {
    const double s = 2 * std::sqrt(1 + r[0][0] - r[1][1] - r[2][2]);
    q = {(r[2][1] - r[1][2]) / s, 0.25 * s, (r[0][1] + r[1][0]) / s, (r[0][2] + r[2][0]) / s};
  } else if (r[1][1] > r[2][2]) {
    const double s = 2 * std::sqrt(1 + r[1][1] - r[0][0] - r[2][2]);
    q = {(r[0][2] - r[2][0]) / s, (r[0][1] + r[1][0]) / s, 0.25 * s, (r[1][2] + r[2][1]) / s};
  } else {
    const double s = 2 * std::sqrt(1 + r[2][2] - r[0][0] - r[1][1]);
    q = {(r[1][0] - r[0][1]) / s, (r[0][2] + r[2][0]) / s, (r[1][2] + r[2][1]) / s, 0.25 * s};
  }
  if (q[0] < 0)
    for (double& v : q) v = -v;
  return q;
}

// The LaCT scene's cameras as COLMAP cameras (PINHOLE, one per distinct intrinsics) and images named by file.
void colmap_of(const Scene& scene, std::vector<TestCamera>& cameras, std::vector<TestImage>& images) {
  for (const SceneView& v : scene.views) {
    const Camera& c = v.camera;
    const std::vector<double> params = {c.fx, c.fy, c.cx, c.cy};
    uint32_t id = 0;
    for (const TestCamera& k : cameras)
      if (k.params == params && k.width == uint64_t(c.width) && k.height == uint64_t(c.height)) id = k.id;
    if (!id) cameras.push_back({id = uint32_t(cameras.size() + 1), 1, uint64_t(c.width), uint64_t(c.height), params});
    std::array<double, 16> w2c;
    ASSERT_TRUE(invert4(c.c2w, w2c));
    const double r[3][3] = {{w2c[0], w2c[1], w2c[2]}, {w2c[4], w2c[5], w2c[6]}, {w2c[8], w2c[9], w2c[10]}};
    images.push_back({uint32_t(images.size() + 1),
                      quaternion_of(r),
                      {w2c[3], w2c[7], w2c[11]},
                      id,
                      fs::path(v.image_path).filename().string()});
  }
}

struct Difference {
  double rays = 0, c2w = 0, normalized = 0;
  size_t views = 0, ray_views = 0, pixels_compared = 0;
};

// Intrinsics and poses of every view (poses in double, and after pose normalisation from the first four views, as
// --normalize-poses inputs would), rays (float, at the camera's size) of views spread over the scene up to about 2M
// rays, and the pixels of a few views, matched by image file. Rays follow from the intrinsics and pose checked on
// every view; computing them for every full-size view of the desk and GSO scenes took 110 s of the sanitizer run.
Difference compare_scenes(const Scene& lact_scene, const Scene& colmap) {
  Difference d;
  size_t all_rays = 0;
  for (const SceneView& v : lact_scene.views) all_rays += size_t(v.camera.width) * size_t(v.camera.height);
  const size_t ray_budget = size_t(1) << 21, ray_stride = std::max<size_t>(1, (all_rays + ray_budget - 1) / ray_budget);
  std::map<std::string, const SceneView*> by_file;
  for (const SceneView& v : colmap.views) by_file[fs::canonical(v.image_path).string()] = &v;
  std::vector<Camera> reference_a, reference_b;
  for (size_t i = 0; i < lact_scene.views.size(); ++i) {
    const SceneView& a = lact_scene.views[i];
    const SceneView& b = *by_file.at(fs::canonical(a.image_path).string());
    if (i < 4) reference_a.push_back(a.camera), reference_b.push_back(b.camera);  // as --normalize-poses inputs
    EXPECT_TRUE(a.camera.width == b.camera.width && a.camera.height == b.camera.height && a.camera.fx == b.camera.fx &&
                a.camera.fy == b.camera.fy && a.camera.cx == b.camera.cx && a.camera.cy == b.camera.cy)
        << a.image_path;
    for (int k = 0; k < 16; ++k) d.c2w = std::max(d.c2w, std::abs(a.camera.c2w[k] - b.camera.c2w[k]));
    ++d.views;
    const bool last = i + 1 == lact_scene.views.size();
    if (i % ray_stride == 0 || last) {
      std::vector<float> oa, da, ob, db;
      compute_rays(a.camera, a.camera.height, a.camera.width, oa, da);
      compute_rays(b.camera, b.camera.height, b.camera.width, ob, db);
      d.rays = std::max({d.rays, test::max_abs_error(oa, ob), test::max_abs_error(da, db)});
      ++d.ray_views;
    }
    if (i % 97 == 0 || last) {
      const PosedImage pa = load_view(a, a.camera.height / 8 * 8, a.camera.width / 8 * 8, {1, 1, 1});
      const PosedImage pb = load_view(b, b.camera.height / 8 * 8, b.camera.width / 8 * 8, {1, 1, 1});
      EXPECT_EQ(pa.image.rgb, pb.image.rgb) << a.image_path;
      d.pixels_compared += pa.image.rgb.size() / 3;
    }
  }
  const PoseTransform ta = mean_pose_transform(reference_a), tb = mean_pose_transform(reference_b);
  for (const SceneView& a : lact_scene.views) {
    const SceneView& b = *by_file.at(fs::canonical(a.image_path).string());
    const Camera ca = apply_pose_transform(ta, a.camera), cb = apply_pose_transform(tb, b.camera);
    for (int k = 0; k < 16; ++k) d.normalized = std::max(d.normalized, std::abs(ca.c2w[k] - cb.c2w[k]));
  }
  return d;
}

// `camera_file` in the LaCT layout, written as a COLMAP model (binary and text) whose image names are relative to
// the folder the LaCT file's images are in; rays within 1e-5, identical pixels.
void check_against_lact(const std::string& name, const fs::path& camera_file) {
  if (!fs::exists(camera_file)) GTEST_SKIP() << camera_file << " not present";
  const Scene lact_scene = read_one(camera_file);
  std::vector<TestCamera> cameras;
  std::vector<TestImage> images;
  colmap_of(lact_scene, cameras, images);
  ReadOptions options;
  options.images = fs::path(lact_scene.views[0].image_path).parent_path().string();
  for (bool binary : {true, false}) {
    const fs::path root = fresh_folder(name + (binary ? "_bin" : "_txt"));
    write_model(root, cameras, images, binary);
    const Scene colmap = read_one(root / "sparse" / "0", options);
    ASSERT_EQ(colmap.views.size(), lact_scene.views.size());
    const Difference d = compare_scenes(lact_scene, colmap);
    std::printf(
        "%s as COLMAP %s: %zu views, max |ray difference| %.3g (float rays of %zu views), max |c2w difference| "
        "%.3g, after pose normalisation %.3g; %zu pixels compared, identical\n",
        name.c_str(), binary ? "binary" : "text", d.views, d.rays, d.ray_views, d.c2w, d.normalized, d.pixels_compared);
    EXPECT_LE(d.rays, 1e-5) << name;
    EXPECT_LE(d.c2w, 1e-6) << name;
    EXPECT_LE(d.normalized, 1e-6) << name;
    fs::remove_all(root);
  }
}

std::string shared_data() { return test::env_path("LACT_FIXTURE_DIR") + "/../../data"; }

TEST(ColmapLayout, SameRaysAndPixelsAsLactLayoutExample) {
  check_against_lact("gso_toy_64", std::string(LACT_TEST_DATA_DIR) + "/../../examples/gso_toy_64/opencv_cameras.json");
}

TEST(ColmapLayout, SameRaysAndPixelsAsLactLayoutSharedGso) {
  check_against_lact("gso_toy", shared_data() + "/gso_toy/opencv_cameras.json");
}

TEST(ColmapLayout, SameRaysAndPixelsAsLactLayoutMydesk) {
  check_against_lact("mydesk", shared_data() + "/mydesk/opencv_cameras.json");
}

// A COLMAP camera (`model`: fx fy cx cy, then the `lens` values in COLMAP's order) and the same camera in
// nerfstudio's transforms.json (`camera_model`, the lens values under their names): the same undistorted
// intrinsics and pixels.
void expect_colmap_as_nerfstudio(int model, const std::string& camera_model,
                                 const std::vector<std::pair<std::string, double>>& lens) {
  const fs::path root = fresh_folder("distorted");
  const int w = 48, h = 32;
  Image img{w, h, std::vector<float>(w * h * 3)};
  for (size_t i = 0; i < img.rgb.size(); ++i) img.rgb[i] = float((i * 37) % 101) / 100.0f;
  fs::create_directories(root / "images");
  write_png((root / "images" / "a.png").string(), img);
  std::vector<double> k = {41.5, 42.25, 24.5, 15.75};
  for (const auto& [name, value] : lens) k.push_back(value);
  write_model(root, {{1, model, w, h, k}}, {{1, {1, 0, 0, 0}, {0.5, 0, 2}, 1, "a.png"}}, true);
  // OpenGL camera-to-world of the same pose: c2w = [I | (-0.5, 0, -2)], y and z axes flipped.
  nlohmann::json transforms = {
      {"camera_model", camera_model},
      {"fl_x", k[0]},
      {"fl_y", k[1]},
      {"cx", k[2]},
      {"cy", k[3]},
      {"w", w},
      {"h", h},
      {"frames",
       {{{"file_path", "images/a.png"},
         {"transform_matrix", {{1, 0, 0, -0.5}, {0, -1, 0, 0}, {0, 0, -1, -2}, {0, 0, 0, 1}}}}}}};
  for (const auto& [name, value] : lens) transforms[name] = value;
  write_text(root / "transforms.json", transforms.dump());
  const Scene ns = read_one(root / "transforms.json"), colmap = read_one(root / "sparse" / "0");
  const SceneView &a = ns.views[0], &b = colmap.views[0];
  EXPECT_TRUE(a.distortion == b.distortion) << camera_model;
  EXPECT_TRUE(a.camera.fx == b.camera.fx && a.camera.fy == b.camera.fy && a.camera.cx == b.camera.cx &&
              a.camera.cy == b.camera.cy)
      << camera_model;
  EXPECT_NE(a.camera.fx, float(k[0]));  // undistorted: new intrinsics
  EXPECT_EQ(a.camera.c2w, b.camera.c2w);
  const PosedImage pa = load_view(a, h, w, {1, 1, 1}), pb = load_view(b, h, w, {1, 1, 1});
  EXPECT_EQ(pa.image.rgb, pb.image.rgb);
  fs::remove_all(root);
}

TEST(ColmapLayout, DistortionAsNerfstudio) {
  expect_colmap_as_nerfstudio(4, "OPENCV", {{"k1", -0.21}, {"k2", 0.05}, {"p1", 1.5e-3}, {"p2", -8e-4}});
  expect_colmap_as_nerfstudio(5, "OPENCV_FISHEYE", {{"k1", 0.021}, {"k2", -0.0052}, {"k3", 0.0011}, {"k4", -2.1e-4}});
}

}  // namespace
}  // namespace lact
