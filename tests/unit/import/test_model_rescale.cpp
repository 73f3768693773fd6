// import/model_rescale.h: a COLMAP model made on images of one size carried over to the same images at another,
// against values worked out by hand (a resize by sx, sy maps every pixel coordinate (x, y) to (sx x, sy y)), in
// both of COLMAP's formats: cameras scaled and split per size, 2D points scaled, everything else kept.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "datasets/colmap_model.h"
#include "import/model_rescale.h"
#include "system/error.h"

namespace lact {
namespace {

namespace fs = std::filesystem;

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void write(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// Two cameras at 200x100: 1 SIMPLE_RADIAL (f 150, centre 100 50, k 0.02), 7 PINHOLE (160 158, 99 51).
std::string cameras_bin() {
  std::string out;
  put<uint64_t>(out, 2);
  put<uint32_t>(out, 1), put<int32_t>(out, 2), put<uint64_t>(out, 200), put<uint64_t>(out, 100);
  for (double v : {150.0, 100.0, 50.0, 0.02}) put<double>(out, v);
  put<uint32_t>(out, 7), put<int32_t>(out, 1), put<uint64_t>(out, 200), put<uint64_t>(out, 100);
  for (double v : {160.0, 158.0, 99.0, 51.0}) put<double>(out, v);
  return out;
}

// Images a (camera 1, two points), b (camera 1), c (camera 7, one point).
std::string images_bin() {
  std::string out;
  put<uint64_t>(out, 3);
  const struct {
    uint32_t id, camera;
    const char* name;
    std::vector<double> xy;
  } images[] = {{1, 1, "a.png", {10, 20, 190, 90}}, {2, 1, "b.png", {}}, {3, 7, "c.png", {40, 60}}};
  for (const auto& image : images) {
    put<uint32_t>(out, image.id);
    for (double v : {1.0, 0.0, 0.0, 0.0, 0.5 * image.id, -1.0, 2.0}) put<double>(out, v);
    put<uint32_t>(out, image.camera);
    out.append(image.name, std::strlen(image.name) + 1);
    put<uint64_t>(out, image.xy.size() / 2);
    for (size_t k = 0; k < image.xy.size(); k += 2)
      put<double>(out, image.xy[k]), put<double>(out, image.xy[k + 1]), put<int64_t>(out, 100 + k);
  }
  return out;
}

// The 2D points of each image of images.bin, in file order.
std::vector<std::vector<double>> points_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = 8;
  std::vector<std::vector<double>> points;
  for (int i = 0; i < 3; ++i) {
    at += 4 + 56 + 4;
    at = bytes.find('\0', at) + 1;
    uint64_t n = 0;
    std::memcpy(&n, bytes.data() + at, 8);
    at += 8;
    std::vector<double> xy;
    for (uint64_t k = 0; k < n; ++k, at += 24) {
      double x = 0, y = 0;
      std::memcpy(&x, bytes.data() + at, 8), std::memcpy(&y, bytes.data() + at + 8, 8);
      xy.push_back(x), xy.push_back(y);
    }
    points.push_back(xy);
  }
  return points;
}

class ModelRescale : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() / ("lact_rescale_" + std::to_string(::getpid()));
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }
  fs::path folder_;
};

TEST_F(ModelRescale, BinaryCamerasScaledAndSplitPointsScaled) {
  write(folder_ / "cameras.bin", cameras_bin());
  write(folder_ / "images.bin", images_bin());
  // a: halved (100x50); b: quartered (50x25), so camera 1 splits; c: 100x50.
  rescale_colmap_model(folder_, {{"a.png", {100, 50}}, {"b.png", {50, 25}}, {"c.png", {100, 50}}});
  const ColmapModel model = read_colmap_model(folder_);
  ASSERT_EQ(model.cameras.size(), 3u);
  const std::vector<std::vector<double>> want = {{75, 50, 25, 0.02}, {37.5, 25, 12.5, 0.02}, {80, 79, 49.5, 25.5}};
  const int sizes[3][2] = {{100, 50}, {50, 25}, {100, 50}};
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_EQ(model.cameras[c].id, c + 1);
    EXPECT_EQ(model.cameras[c].model, c < 2 ? 2 : 1);
    EXPECT_EQ(model.cameras[c].width, sizes[c][0]);
    EXPECT_EQ(model.cameras[c].height, sizes[c][1]);
    ASSERT_EQ(model.cameras[c].params.size(), 4u);
    for (size_t k = 0; k < 4; ++k) EXPECT_DOUBLE_EQ(model.cameras[c].params[k], want[c][k]) << c << " " << k;
  }
  ASSERT_EQ(model.images.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(model.images[i].camera_id, i + 1);
    EXPECT_EQ(model.images[i].t[0], 0.5 * (i + 1));  // poses kept
    EXPECT_EQ(model.images[i].name, std::string(1, static_cast<char>('a' + i)) + ".png");
  }
  const std::vector<std::vector<double>> points = points_of(folder_ / "images.bin");
  EXPECT_EQ(points[0], (std::vector<double>{5, 10, 95, 45}));
  EXPECT_TRUE(points[1].empty());
  EXPECT_EQ(points[2], (std::vector<double>{20, 30}));
}

TEST_F(ModelRescale, TextModelAndAnUnequalScale) {
  write(folder_ / "cameras.txt", "# cameras\n3 SIMPLE_PINHOLE 300 200 240 150 100\n");
  write(folder_ / "images.txt", "# images\n5 1 0 0 0 1 2 3 3 my photo.png\n30 60 -1 150 100 12\n");
  // 300x200 to 200x100: sx 2/3, sy 1/2; one focal length scaled by sqrt(sx sy).
  rescale_colmap_model(folder_, {{"my photo.png", {200, 100}}});
  const ColmapModel model = read_colmap_model(folder_);
  ASSERT_EQ(model.cameras.size(), 1u);
  EXPECT_EQ(model.cameras[0].width, 200);
  EXPECT_EQ(model.cameras[0].height, 100);
  EXPECT_NEAR(model.cameras[0].params[0], 240 * std::sqrt(2.0 / 3 * 0.5), 1e-12);
  EXPECT_NEAR(model.cameras[0].params[1], 100, 1e-12);
  EXPECT_NEAR(model.cameras[0].params[2], 50, 1e-12);
  ASSERT_EQ(model.images.size(), 1u);
  EXPECT_EQ(model.images[0].name, "my photo.png");
  EXPECT_EQ(model.images[0].camera_id, 1u);
  std::ifstream in(folder_ / "images.txt");
  std::string line, points;
  while (std::getline(in, line))
    if (line.rfind("#", 0) != 0 && line.find("photo") == std::string::npos) points = line;
  EXPECT_EQ(points, "20 30 -1 100 50 12");
}

TEST_F(ModelRescale, ATruncatedModelIsOneError) {
  write(folder_ / "cameras.bin", cameras_bin());
  const std::string images = images_bin();
  write(folder_ / "images.bin", images.substr(0, images.size() - 5));
  EXPECT_THROW(rescale_colmap_model(folder_, {}), Error);
}

}  // namespace
}  // namespace lact
