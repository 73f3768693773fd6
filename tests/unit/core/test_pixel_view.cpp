// Input pixels read in place (core/pixel_view.h): a packed view is used as it is, any other layout is packed
// once by the index formula; the model's encode of a view in place equals its encode of separately held images
// (which it packs once, counted), and render_into writes the images render returns; renders of one state from
// several threads at once equal the serial ones bit for bit (the CPU backend, the Python module's parallel renders).
#include <gtest/gtest.h>

#include <thread>

#include "core/model.h"
#include "core/pixel_view.h"
#include "core/random_weights.h"
#include "kernels/backend_factory.h"
#include "system/error.h"
#include "tests/common/small_models.h"

namespace lact {
namespace {

using test::random_views;
using test::small_config;

// The value a test image holds at (image, row, pixel, channel): every element tells where it came from.
float marker(int64_t i, int64_t y, int64_t x, int64_t c) { return static_cast<float>(i * 1000 + y * 100 + x * 10 + c); }

TEST(PixelView, PackedIsReadInPlace) {
  std::vector<float> pixels(2 * 3 * 4 * 3, 0.5f);
  const PixelView view = PixelView::packed(pixels.data(), 2, 3, 4);
  EXPECT_TRUE(view.is_packed());
  std::vector<float> storage;
  const int64_t before = input_pixel_bytes_copied();
  EXPECT_EQ(packed_pixels(view, storage), pixels.data());
  EXPECT_TRUE(storage.empty());
  EXPECT_EQ(input_pixel_bytes_copied(), before);
}

TEST(PixelView, OtherLayoutsArePackedOnce) {
  // Fortran order (the image index fastest) of 2 images of 3 x 4, then the same with the columns reversed.
  const int64_t n = 2, h = 3, w = 4;
  std::vector<float> fortran(n * h * w * 3);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t c = 0; c < 3; ++c) fortran[i + n * (y + h * (x + w * c))] = marker(i, y, x, c);
  PixelView view;
  view.data = fortran.data(), view.count = n, view.height = h, view.width = w;
  view.strides = {1, n, n * h, n * h * w};
  PixelView mirrored = view;
  mirrored.data = fortran.data() + (w - 1) * n * h, mirrored.strides[2] = -n * h;
  for (const bool flip : {false, true}) {
    const PixelView& v = flip ? mirrored : view;
    EXPECT_FALSE(v.is_packed());
    std::vector<float> storage;
    const int64_t before = input_pixel_bytes_copied();
    const float* packed = packed_pixels(v, storage);
    EXPECT_EQ(packed, storage.data());
    EXPECT_EQ(input_pixel_bytes_copied() - before, n * h * w * 3 * 4);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          for (int64_t c = 0; c < 3; ++c)
            ASSERT_EQ(packed[((i * h + y) * w + x) * 3 + c], marker(i, y, flip ? w - 1 - x : x, c));
  }
}

TEST(PixelView, AStrideAlongAnExtentOfOneIsNeverFollowed) {
  std::vector<float> pixels(5 * 3);
  PixelView view = PixelView::packed(pixels.data(), 1, 1, 5);
  view.strides[0] = 7, view.strides[1] = -3;  // as numpy may state them for a C-contiguous (1, 1, 5, 3) array
  EXPECT_TRUE(view.is_packed());
  view.strides[2] = 4;
  EXPECT_FALSE(view.is_packed());
}

TEST(PixelView, CheckNamesWhatIsWrong) {
  std::vector<float> pixels(12);
  EXPECT_THROW(PixelView().check("input views"), Error);
  EXPECT_THROW(PixelView::packed(pixels.data(), 0, 2, 2).check("input views"), Error);
  EXPECT_NO_THROW(PixelView::packed(pixels.data(), 1, 2, 2).check("input views"));
  try {
    PixelView::packed(pixels.data(), 1, 0, 2).check("images");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("images"), std::string::npos) << e.what();
  }
}

struct SmallModel {
  std::unique_ptr<Backend> be = make_cpu_backend(2);
  Model model{random_model_weights(small_config(false, 2), *be, 7), *be};
};

std::vector<std::vector<float>> state_values(Backend& be, const SceneState& state) {
  std::vector<std::vector<float>> values;
  for (const ModuleState& module : state.modules)
    for (const auto& [name, tensor] : module.tensors) values.push_back(be.to_host(tensor));
  return values;
}

TEST(ModelPixels, ViewsInPlaceEncodeAsSeparateImagesWithoutACopy) {
  SmallModel m;
  const std::vector<PosedImage> views = random_views(3, 16, 24);
  std::vector<Camera> cameras;
  std::vector<float> pixels;
  for (const PosedImage& v : views) {
    cameras.push_back(v.camera);
    pixels.insert(pixels.end(), v.image.rgb.begin(), v.image.rgb.end());
  }
  const int64_t bytes = static_cast<int64_t>(pixels.size() * sizeof(float));
  int64_t before = input_pixel_bytes_copied();
  const SceneState separate = m.model.encode(views);
  EXPECT_EQ(input_pixel_bytes_copied() - before, bytes);  // packed once
  before = input_pixel_bytes_copied();
  const SceneState in_place = m.model.encode(cameras, PixelView::packed(pixels.data(), 3, 16, 24));
  EXPECT_EQ(input_pixel_bytes_copied(), before);  // read where it lies
  EXPECT_EQ(state_values(*m.be, in_place), state_values(*m.be, separate));
  EXPECT_THROW(m.model.encode({cameras[0]}, PixelView::packed(pixels.data(), 3, 16, 24)), Error);
}

TEST(ModelPixels, RenderIntoWritesWhatRenderReturns) {
  SmallModel m;
  const SceneState state = m.model.encode(random_views(3, 16, 16));
  std::vector<Camera> cameras = {random_views(1, 16, 16, 5)[0].camera, random_views(1, 16, 24, 6)[0].camera};
  cameras.push_back(cameras[0]);
  const std::vector<Image> images = m.model.render(state, cameras);
  // The same cameras in the same order (the same batches): the same bits, each image where its camera is.
  std::vector<float> same(2 * 16 * 16 * 3 + 16 * 24 * 3, -1.0f);
  m.model.render_into(state, cameras, same.data());
  EXPECT_EQ(std::vector<float>(same.begin(), same.begin() + 768), images[0].rgb);
  EXPECT_EQ(std::vector<float>(same.begin() + 768, same.begin() + 1920), images[1].rgb);
  EXPECT_EQ(std::vector<float>(same.begin() + 1920, same.end()), images[2].rgb);
  // Reordered, the two 16x16 cameras share a batch: a view's pixels may then differ in the last bit (on AVX2-only
  // CPUs the products' kernels round a row by its place in the block), never more.
  std::vector<float> out(2 * 16 * 16 * 3 + 16 * 24 * 3, -1.0f);
  m.model.render_into(state, {cameras[0], cameras[2], cameras[1]}, out.data());
  const std::vector<float> first(out.begin(), out.begin() + 768), second(out.begin() + 768, out.begin() + 1536),
      third(out.begin() + 1536, out.end());
  for (const auto& [got, want] :
       {std::pair{&first, &images[0].rgb}, {&second, &images[2].rgb}, {&third, &images[1].rgb}}) {
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < got->size(); ++i) ASSERT_NEAR((*got)[i], (*want)[i], 1e-6) << i;
  }
}

TEST(ModelPixels, RendersFromSeveralThreadsAtOnceEqualSerialOnes) {
  SmallModel m;
  const SceneState state = m.model.encode(random_views(3, 32, 32));
  std::vector<std::vector<Camera>> work;
  for (unsigned k = 0; k < 4; ++k) {
    std::vector<Camera> cameras;
    for (const PosedImage& v : random_views(3, 32, 32, 20 + k)) cameras.push_back(v.camera);
    work.push_back(cameras);
  }
  std::vector<std::vector<float>> serial(work.size()), parallel(work.size());
  for (size_t k = 0; k < work.size(); ++k) {
    serial[k].resize(3 * 32 * 32 * 3);
    m.model.render_into(state, work[k], serial[k].data());
  }
  std::vector<std::thread> threads;
  for (size_t k = 0; k < work.size(); ++k)
    threads.emplace_back([&, k] {
      parallel[k].resize(3 * 32 * 32 * 3);
      for (int repeat = 0; repeat < 5; ++repeat) m.model.render_into(state, work[k], parallel[k].data());
    });
  for (std::thread& t : threads) t.join();
  for (size_t k = 0; k < work.size(); ++k) EXPECT_EQ(parallel[k], serial[k]) << "thread " << k;
}

}  // namespace
}  // namespace lact
