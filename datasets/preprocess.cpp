#include "datasets/preprocess.h"

#include <stb/stb_image_resize.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/image_size.h"
#include "datasets/image_io.h"
#include "datasets/missing_image.h"
#include "system/error.h"

namespace lact {

namespace {

// PIL's Image.paste(rgba, mask=alpha) onto an opaque background, in its integer arithmetic
// (MULDIV255(a, b) = (t + (t >> 8)) >> 8 with t = a*b + 128).
inline int muldiv255(int a, int b) {
  const int t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

// The most times smaller than its camera an image may be: the images_2/4/8 copies datasets ship, or N under
// --downscale N. A 3x2 image for a 48x32 camera has the camera's aspect, but is no copy of what it saw: scaled
// up to the working size it would be read as a blur.
constexpr int kMaxShrink = 8;

std::string size_mismatch(const Camera& camera, int height, int width) {
  return "image is " + std::to_string(height) + "x" + std::to_string(width) + " but its camera is for " +
         std::to_string(camera.height) + "x" + std::to_string(camera.width);
}

// When the image is its camera turned a quarter, why that happens: a photo whose EXIF orientation turns it only
// on display (lact reads the stored pixels, as COLMAP and PIL do). Empty otherwise.
std::string turned_image_hint(const Camera& camera, int height, int width) {
  const double turned = static_cast<double>(camera.height) / camera.width - static_cast<double>(width) / height;
  if (width == height || camera.width == camera.height || (height > width) == (camera.height > camera.width) ||
      std::abs(turned) > 1.5 / std::min(width, camera.width))
    return "";
  return ": the camera's size turned a quarter: a photo whose EXIF orientation rotates it only on display? lact "
         "reads the stored pixels: rotate the pixels (e.g. `mogrify -auto-orient`) or state the stored size";
}

// A camera stated at one size applied to an image of height x width: its intrinsics rescaled (core's
// camera_at_size) when the aspect ratio agrees and the image is at most kMaxShrink (or `downscale`) times smaller
// (a downscaled copy), refused otherwise.
Camera camera_for_image(const Camera& camera, int height, int width, int downscale, const std::string& where) {
  if (camera.width == width && camera.height == height) return camera;
  const std::string sizes = size_mismatch(camera, height, width) + turned_image_hint(camera, height, width);
  const double aspect_stated = static_cast<double>(camera.width) / camera.height;
  const double aspect_actual = static_cast<double>(width) / height;
  if (std::abs(aspect_stated - aspect_actual) > 1.5 / std::min(height, camera.height)) throw Error(where, sizes);
  const int limit = std::max(kMaxShrink, downscale);
  const double shrink = static_cast<double>(camera.width) / width;
  if (shrink > limit + 0.5)
    throw Error(where, sizes + ": " + std::to_string(static_cast<int>(std::lround(shrink))) +
                           " times smaller, more than a downscaled copy (at most " + std::to_string(limit) +
                           " times; --downscale N for images_N)");
  return camera_at_size(camera, height, width);
}

// An image file larger than its camera is refused, judged from its header before any pixel is decoded: the
// camera's w and h state the image's size, and the memory check counts each file view at that size.
void check_file_not_larger(const Camera& camera, int height, int width, const std::string& path) {
  if (width <= camera.width && height <= camera.height) return;
  const std::string turned = turned_image_hint(camera, height, width);
  if (!turned.empty()) throw Error(path, size_mismatch(camera, height, width) + turned);
  throw Error(path, size_mismatch(camera, height, width) +
                        ": larger than its camera (whose w and h the memory check counts): resize the image or "
                        "correct the camera's w and h");
}

}  // namespace

CoverCrop cover_crop(const Camera& camera, int height, int width) {
  const int w = camera.width, h = camera.height;
  const double scale = std::max(static_cast<double>(width) / w, static_cast<double>(height) / h);
  CoverCrop c;
  c.resized_width = std::max(width, static_cast<int>(std::lround(w * scale)));
  c.resized_height = std::max(height, static_cast<int>(std::lround(h * scale)));
  c.left = (c.resized_width - width) / 2;
  c.top = (c.resized_height - height) / 2;
  const float sx = static_cast<float>(c.resized_width) / w, sy = static_cast<float>(c.resized_height) / h;
  c.camera = camera;
  c.camera.fx *= sx;
  c.camera.fy *= sy;
  c.camera.cx = camera.cx * sx - c.left;
  c.camera.cy = camera.cy * sy - c.top;
  c.camera.width = width;
  c.camera.height = height;
  return c;
}

std::string nearest_sizes_text(int height, int width, int patch) {
  auto size = [](int h, int w) { return std::to_string(h) + "x" + std::to_string(w); };
  const int below_h = height / patch * patch, below_w = width / patch * patch;
  const std::string above = size(below_h + patch, below_w + patch);
  return below_h > 0 && below_w > 0 ? size(below_h, below_w) + " or " + above : above;
}

std::pair<int, int> working_size(const Scene& scene, const std::vector<int>& indices, const ViewLoadOptions& options,
                                 int patch) {
  if (options.height > 0 && options.width > 0) {
    if (options.height % patch || options.width % patch)
      throw Error("--size", "size " + std::to_string(options.height) + "x" + std::to_string(options.width) +
                                " is not divisible by the patch size " + std::to_string(patch) + ": try " +
                                nearest_sizes_text(options.height, options.width, patch));
    return {options.height, options.width};
  }
  const Camera& first = scene.views[indices.at(0)].camera;
  for (int i : indices) {
    const Camera& c = scene.views[i].camera;
    if (c.width != first.width || c.height != first.height)
      throw Error(scene.source, "views have different sizes (view " + std::to_string(indices[0]) + " is " +
                                    std::to_string(first.height) + "x" + std::to_string(first.width) + ", view " +
                                    std::to_string(i) + " is " + std::to_string(c.height) + "x" +
                                    std::to_string(c.width) + "); choose a working size with --size HxW");
  }
  if (first.height % patch || first.width % patch)
    throw Error(scene.source, "views are " + std::to_string(first.height) + "x" + std::to_string(first.width) +
                                  " (HxW), not divisible by the patch size " + std::to_string(patch) +
                                  "; choose --size HxW, e.g. " + nearest_sizes_text(first.height, first.width, patch));
  return {first.height, first.width};
}

Camera view_camera(const SceneView& view, int height, int width) {
  return cover_crop(view.camera, height, width).camera;
}

PosedImage load_view(const SceneView& view, int height, int width, const std::array<float, 3>& bg) {
  // RGBA in [0, 1] at the file's size, with the view's pinhole camera at that size.
  int w = 0, h = 0;
  std::vector<float> rgba;
  Camera camera;
  if (view.pixels) {
    w = view.pixels->width, h = view.pixels->height;
    camera = camera_for_image(view.camera, h, w, 1, "view pixels");
    rgba.resize(static_cast<size_t>(w) * h * 4);
    for (size_t i = 0; i < static_cast<size_t>(w) * h; ++i) {
      for (int c = 0; c < 3; ++c) rgba[i * 4 + c] = view.pixels->rgb[i * 3 + c];
      rgba[i * 4 + 3] = 1.0f;
    }
  } else {
    const std::string missing = missing_image_hint(view.image_path);
    if (!missing.empty()) throw Error(view.image_path, "cannot open file (no such file)" + missing);
    if (read_image_size(view.image_path, w, h)) check_file_not_larger(view.camera, h, w, view.image_path);
    const Rgba8Image file = read_image(view.image_path);
    w = file.width, h = file.height;
    check_file_not_larger(view.camera, h, w, view.image_path);
    camera = camera_for_image(view.camera, h, w, view.downscale, view.image_path);
    const bool plain = !view.distortion.any() && w == width && h == height;
    const bool white = bg[0] == 1.0f && bg[1] == 1.0f && bg[2] == 1.0f;
    if (plain && (white || !file.has_alpha)) {  // the official loader's exact arithmetic
      PosedImage out{camera, Image{w, h, std::vector<float>(static_cast<size_t>(w) * h * 3)}};
      for (size_t i = 0; i < static_cast<size_t>(w) * h; ++i) {
        const uint8_t* p = file.pixels.data() + 4 * i;
        for (int c = 0; c < 3; ++c)
          out.image.rgb[i * 3 + c] =
              file.has_alpha ? static_cast<float>(muldiv255(255, 255 - p[3]) + muldiv255(p[c], p[3])) / 255.0f
                             : p[c] / 255.0f;
      }
      return out;
    }
    rgba.resize(file.pixels.size());
    for (size_t i = 0; i < rgba.size(); ++i) rgba[i] = file.pixels[i] / 255.0f;
    if (view.distortion.any()) {
      const Camera distorted = camera_for_image(view.distorted_camera, h, w, view.downscale, view.image_path);
      rgba = undistort_image(rgba, 4, distorted, view.distortion, camera);
    }
  }

  // Resize to cover the working size (alpha premultiplied inside stb), crop the centre, composite.
  const CoverCrop crop = cover_crop(camera, height, width);
  const int rw = crop.resized_width, rh = crop.resized_height;
  std::vector<float> resized;
  const float* source = rgba.data();
  if (rw != w || rh != h) {
    resized.resize(static_cast<size_t>(rw) * rh * 4);
    if (!stbir_resize_float_generic(rgba.data(), w, h, 0, resized.data(), rw, rh, 0, 4, 3, 0, STBIR_EDGE_CLAMP,
                                    STBIR_FILTER_CATMULLROM, STBIR_COLORSPACE_LINEAR, nullptr))
      throw Error(view.image_path, "image resize failed");
    source = resized.data();
  }
  PosedImage out{crop.camera, Image{width, height, std::vector<float>(static_cast<size_t>(width) * height * 3)}};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const float* p = source + (static_cast<size_t>(y + crop.top) * rw + x + crop.left) * 4;
      const float a = std::clamp(p[3], 0.0f, 1.0f);
      for (int c = 0; c < 3; ++c)
        out.image.rgb[(static_cast<size_t>(y) * width + x) * 3 + c] =
            std::clamp(p[c] * a + bg[c] * (1.0f - a), 0.0f, 1.0f);
    }
  return out;
}

std::vector<PosedImage> load_views(const Scene& scene, const std::vector<int>& indices, int height, int width,
                                   const std::array<float, 3>& background, bool with_images) {
  std::vector<PosedImage> views;
  views.reserve(indices.size());
  for (int i : indices) {
    const SceneView& v = scene.views.at(i);
    views.push_back(with_images ? load_view(v, height, width, background)
                                : PosedImage{view_camera(v, height, width), Image{}});
  }
  return views;
}

std::array<float, 3> parse_background(const std::string& text, const std::string& flag) {
  if (text == "white") return {1, 1, 1};
  if (text == "black") return {0, 0, 0};
  if (text == "grey" || text == "gray") return {0.5f, 0.5f, 0.5f};
  float r, g, b;
  char extra;
  if (std::sscanf(text.c_str(), "%f,%f,%f%c", &r, &g, &b, &extra) == 3 && r >= 0 && r <= 1 && g >= 0 && g <= 1 &&
      b >= 0 && b <= 1)
    return {r, g, b};
  throw Error(flag, "'" + text + "' is not white, black, grey or R,G,B in [0, 1]");
}

std::string background_text(const std::array<float, 3>& rgb) {
  for (const char* name : {"white", "black", "grey"})
    if (parse_background(name) == rgb) return name;
  char text[64];
  std::snprintf(text, sizeof(text), "%.9g,%.9g,%.9g", rgb[0], rgb[1], rgb[2]);
  return text;
}

}  // namespace lact
