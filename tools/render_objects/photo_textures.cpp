#include "photo_textures.h"

#include <stb_image.h>  // from libstb (Debian's shared build)

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

namespace ro {

namespace fs = std::filesystem;

namespace {

bool is_photo(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

}  // namespace

PhotoLibrary PhotoLibrary::load(const std::vector<std::string>& paths) {
  std::vector<fs::path> files;
  for (const std::string& arg : paths) {
    if (fs::is_directory(arg)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(arg))
        if (entry.is_regular_file() && is_photo(entry.path())) found.push_back(entry.path());
      if (found.empty()) throw std::runtime_error(arg + ": no .png or .jpg files in this folder");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(arg)) {
      files.emplace_back(arg);
    } else {
      throw std::runtime_error(arg + ": no such file or folder");
    }
  }
  PhotoLibrary library;
  for (const fs::path& file : files) {
    int w = 0, h = 0, comp = 0;
    unsigned char* data = stbi_load(file.string().c_str(), &w, &h, &comp, 4);
    if (!data) throw std::runtime_error(file.string() + ": cannot decode the image (" + stbi_failure_reason() + ")");
    Photo photo;
    photo.name = file.filename().string();
    photo.width = w, photo.height = h;
    photo.rgba.assign(data, data + static_cast<size_t>(w) * h * 4);
    stbi_image_free(data);
    if (w < 16 || h < 16)
      throw std::runtime_error(file.string() + ": too small for a texture (under 16 pixels a side)");
    library.photos_.push_back(std::move(photo));
  }
  return library;
}

std::shared_ptr<const Texture> PhotoLibrary::random_crop(Rng& rng, int size) const {
  if (photos_.empty()) return nullptr;
  const Photo& photo = photos_[static_cast<size_t>(rng.integer(0, static_cast<int>(photos_.size()) - 1))];
  const int shorter = std::min(photo.width, photo.height);
  const int side = std::max(size / 4, static_cast<int>(rng.uniform(0.25, 1.0) * shorter));
  const int x0 = rng.integer(0, photo.width - std::min(side, photo.width));
  const int y0 = rng.integer(0, photo.height - std::min(side, photo.height));
  const bool mirror = rng.chance(0.5);
  std::vector<uint8_t> out(static_cast<size_t>(size) * size * 4);
  // Box filter: each output texel averages the photo texels whose centres fall in its footprint (at least one).
  const double step = static_cast<double>(side) / size;
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      const int sx = mirror ? size - 1 - x : x;
      const int ax = x0 + static_cast<int>(sx * step), bx = std::max(ax + 1, x0 + static_cast<int>((sx + 1) * step));
      const int ay = y0 + static_cast<int>(y * step), by = std::max(ay + 1, y0 + static_cast<int>((y + 1) * step));
      unsigned sum[3] = {0, 0, 0}, n = 0;
      for (int py = ay; py < std::min(by, photo.height); ++py)
        for (int px = ax; px < std::min(bx, photo.width); ++px, ++n) {
          const uint8_t* p = &photo.rgba[(static_cast<size_t>(py) * photo.width + px) * 4];
          sum[0] += p[0], sum[1] += p[1], sum[2] += p[2];
        }
      uint8_t* o = &out[(static_cast<size_t>(y) * size + x) * 4];
      for (int k = 0; k < 3; ++k) o[k] = static_cast<uint8_t>(n ? (sum[k] + n / 2) / n : 255);
      o[3] = 255;
    }
  return std::make_shared<const Texture>(size, size, std::move(out), size);
}

}  // namespace ro
