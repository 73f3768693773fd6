// A triangle mesh with per-vertex normals and UVs, and per-triangle materials (base colour factor x texture).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "texture.h"
#include "vecmath.h"

namespace ro {

struct Material {
  Rgba base_color;                         // linear RGBA factor (glTF baseColorFactor)
  std::shared_ptr<const Texture> texture;  // may be null
  Wrap wrap_s = Wrap::Repeat, wrap_t = Wrap::Repeat;
  // Blinn-Phong highlight (plastic-like): white, specular x diffuse light x (n . h)^shininess. glTF files and the
  // primitive-style procedural objects keep 0 (matte), so their renders are unchanged.
  float specular = 0.0f;
  float shininess = 32.0f;
};

struct Mesh {
  std::string name;
  std::vector<Vec3> positions;
  std::vector<Vec3> normals;           // unit, one per position
  std::vector<Vec2> uvs;               // one per position
  std::vector<uint32_t> indices;       // 3 per triangle
  std::vector<uint32_t> tri_material;  // one per triangle, into materials
  std::vector<Material> materials;

  size_t triangles() const { return indices.size() / 3; }
};

struct Bounds {
  Vec3 lo{1e30f, 1e30f, 1e30f}, hi{-1e30f, -1e30f, -1e30f};
  bool empty() const { return lo.x > hi.x; }
};

// Bounds of the vertices that triangles use.
Bounds bounds(const Mesh& mesh);

// Applies a transform to positions (and its inverse transpose to normals).
void transform(Mesh& mesh, const Mat4& m);

// Appends src to dst (indices and material ids are offset).
void append(Mesh& dst, const Mesh& src);

// Centres the bounding box at the origin and scales uniformly so that its largest side is 2 * fill (so the object
// fits in [-fill, fill]^3; GSO/LaCT convention: fill = 1, the unit cube [-1,1]^3). Returns the transform applied.
Mat4 normalize_to_unit_cube(Mesh& mesh, double fill = 1.0);

// Centres the bounding box at the origin and scales uniformly so that the farthest vertex is at distance `radius`
// (the unit sphere: seen from 2.7 with a 50 deg field of view, such an object is never cut by the image border).
Mat4 normalize_to_unit_sphere(Mesh& mesh, double radius = 1.0);

// Checks sizes and index ranges; throws std::runtime_error with a message on a malformed mesh.
void validate(const Mesh& mesh);

}  // namespace ro
