// An OpenGL texture holding one 8-bit RGB image (the novel view, its ground truth, the error map).
#pragma once

#include <cstdint>

#include "viewer/session_parts.h"

namespace lact::viewer {

class Texture {
 public:
  Texture();
  ~Texture();
  Texture(const Texture&) = delete;
  Texture& operator=(const Texture&) = delete;

  // Uploads `image` (reallocating when its size changed). `smooth`: linear filtering (for images drawn larger
  // or smaller than an integer multiple of their size); otherwise nearest, so every texel shows exactly.
  void upload(const Rgb8& image, bool smooth);
  // What the texture holds, read back from OpenGL.
  Rgb8 read_back() const;

  bool empty() const { return width_ == 0; }
  int width() const { return width_; }
  int height() const { return height_; }
  void* imgui_id() const { return reinterpret_cast<void*>(static_cast<intptr_t>(id_)); }

 private:
  unsigned id_ = 0;
  int width_ = 0, height_ = 0;
};

}  // namespace lact::viewer
