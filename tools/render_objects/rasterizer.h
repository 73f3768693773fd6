// A CPU rasteriser: visibility buffer (z-buffer + triangle id + perspective-correct barycentrics) at K x K
// supersampling, then deferred shading per sample and a box-filter resolve to straight-alpha RGBA8.
#pragma once

#include <cstdint>
#include <vector>

#include "cameras.h"
#include "mesh.h"

namespace ro {

// Lambert with one directional light plus ambient, in linear colour:
//   colour = albedo * (ambient + diffuse * max(0, n . light_dir)), with n turned towards the camera,
// plus, for a material with specular > 0, a white highlight specular * diffuse * max(0, n . h)^shininess
// (h halfway between the light and the view direction; only where n . light_dir > 0).
struct Lighting {
  Vec3 direction{0, 0, 1};  // unit, world space, pointing towards the light
  float ambient = 0.4f;
  float diffuse = 0.7f;
};

// A random light per object: direction on the upper part of the sphere (z in [0.1, 1]), ambient in [0.3, 0.5],
// diffuse in [0.5, 0.8] (Directional); Soft: ambient in [0.5, 0.7], diffuse in [0.3, 0.5], closer to the bright,
// even studio lighting of scanned-object renders such as GSO's.
enum class LightingStyle { Directional, Soft };
Lighting random_lighting(uint64_t seed, LightingStyle style = LightingStyle::Directional);

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;  // straight alpha; pixels with alpha 0 are (255, 255, 255, 0)
};

class Rasterizer {
 public:
  explicit Rasterizer(int supersample = 2) : ss_(supersample < 1 ? 1 : supersample) {}

  // Renders mesh (world space) with cam into out (resized to the camera's size).
  void render(const Mesh& mesh, const Camera& cam, const Lighting& light, Image& out);

 private:
  void rasterize(const Mesh& mesh, const Camera& cam);
  void resolve(const Mesh& mesh, const Camera& cam, const Lighting& light, Image& out);

  int ss_;
  int sw_ = 0, sh_ = 0;         // supersampled size
  std::vector<Vec3> cam_pos_;   // vertices in camera space
  std::vector<float> inv_z_;    // per sample: 1/z of the nearest surface (0 = empty)
  std::vector<int32_t> tri_;    // per sample: triangle id or -1
  std::vector<float> b1_, b2_;  // per sample: perspective-correct barycentrics of vertices 1 and 2
  std::vector<float> lod_;      // per triangle: texture level of detail in this view
};

}  // namespace ro
