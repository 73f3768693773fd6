// Tessellated primitives with normals and UVs.
#include <cmath>

#include "procedural.h"

namespace ro {

namespace {

uint32_t add_vertex(Mesh& m, Vec3 p, Vec3 n, float u, float v) {
  m.positions.push_back(p);
  m.normals.push_back(normalize(n));
  m.uvs.push_back({u, v});
  return static_cast<uint32_t>(m.positions.size() - 1);
}

void add_triangle(Mesh& m, uint32_t a, uint32_t b, uint32_t c) {
  m.indices.insert(m.indices.end(), {a, b, c});
  m.tri_material.push_back(0);
}

// A (cols+1) x (rows+1) grid of vertices from f(u, v) -> (position, normal); u, v in [0, 1].
template <class F>
void add_grid(Mesh& m, int cols, int rows, float uv_repeat, F f) {
  const auto base = static_cast<uint32_t>(m.positions.size());
  for (int j = 0; j <= rows; ++j)
    for (int i = 0; i <= cols; ++i) {
      const float u = static_cast<float>(i) / cols, v = static_cast<float>(j) / rows;
      Vec3 p, n;
      f(u, v, p, n);
      add_vertex(m, p, n, u * uv_repeat, v * uv_repeat);
    }
  for (int j = 0; j < rows; ++j)
    for (int i = 0; i < cols; ++i) {
      const uint32_t a = base + j * (cols + 1) + i, b = a + 1, c = a + (cols + 1), d = c + 1;
      add_triangle(m, a, b, d);
      add_triangle(m, a, d, c);
    }
}

// A flat disc of radius r at height z facing +z (up = true) or -z.
void add_disc(Mesh& m, float r, float z, bool up, int segments, float uv_repeat) {
  const Vec3 n{0, 0, up ? 1.0f : -1.0f};
  const uint32_t centre = add_vertex(m, {0, 0, z}, n, 0.5f * uv_repeat, 0.5f * uv_repeat);
  const auto base = static_cast<uint32_t>(m.positions.size());
  for (int i = 0; i <= segments; ++i) {
    const float a = kTwoPiF * i / segments;
    add_vertex(m, {r * std::cos(a), r * std::sin(a), z}, n, (0.5f + 0.5f * std::cos(a)) * uv_repeat,
               (0.5f + 0.5f * std::sin(a)) * uv_repeat);
  }
  for (int i = 0; i < segments; ++i) {
    if (up)
      add_triangle(m, centre, base + i, base + i + 1);
    else
      add_triangle(m, centre, base + i + 1, base + i);
  }
}

Mesh make_box(float rep) {
  Mesh m;
  // Each face: its normal, then the directions of texture right (u) and texture up (-v), so that a texture reads
  // upright when the side faces are seen from outside with z up.
  const Vec3 faces[6][3] = {
      {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}},  {{-1, 0, 0}, {0, -1, 0}, {0, 0, 1}}, {{0, 1, 0}, {-1, 0, 0}, {0, 0, 1}},
      {{0, -1, 0}, {1, 0, 0}, {0, 0, 1}}, {{0, 0, 1}, {1, 0, 0}, {0, 1, 0}},   {{0, 0, -1}, {1, 0, 0}, {0, -1, 0}},
  };
  for (const auto& f : faces) {
    const Vec3 n = f[0], ua = f[1], va = f[2];
    add_grid(m, 1, 1, rep, [&](float u, float v, Vec3& p, Vec3& nn) {
      p = n * 0.5f + ua * (u - 0.5f) + va * (0.5f - v);  // v grows downwards in the texture
      nn = n;
    });
  }
  return m;
}

Mesh make_sphere(float rep) {
  Mesh m;
  add_grid(m, 32, 16, rep, [](float u, float v, Vec3& p, Vec3& n) {
    const float th = kTwoPiF * u, ph = kPiF * v;  // ph from the north pole
    n = {std::sin(ph) * std::cos(th), std::sin(ph) * std::sin(th), std::cos(ph)};
    p = n * 0.5f;
  });
  return m;
}

Mesh make_cylinder(float rep) {
  Mesh m;
  add_grid(m, 32, 1, rep, [](float u, float v, Vec3& p, Vec3& n) {
    const float th = kTwoPiF * u;
    n = {std::cos(th), std::sin(th), 0};
    p = {0.5f * n.x, 0.5f * n.y, 0.5f - v};
  });
  add_disc(m, 0.5f, 0.5f, true, 32, rep);
  add_disc(m, 0.5f, -0.5f, false, 32, rep);
  return m;
}

Mesh make_cone(float rep) {
  Mesh m;
  // Side: apex at z = 0.5, base radius 0.5 at z = -0.5; slant normal (cos, sin, r/h) normalised.
  add_grid(m, 32, 4, rep, [](float u, float v, Vec3& p, Vec3& n) {
    const float th = kTwoPiF * u, r = 0.5f * v;
    n = {std::cos(th), std::sin(th), 0.5f};
    p = {r * std::cos(th), r * std::sin(th), 0.5f - v};
  });
  add_disc(m, 0.5f, -0.5f, false, 32, rep);
  return m;
}

Mesh make_torus(float rep) {
  Mesh m;
  const float R = 0.35f, r = 0.15f;  // extent 1 x 1 x 0.3
  add_grid(m, 40, 16, rep, [&](float u, float v, Vec3& p, Vec3& n) {
    const float th = kTwoPiF * u, ph = kTwoPiF * v;
    n = {std::cos(ph) * std::cos(th), std::cos(ph) * std::sin(th), std::sin(ph)};
    p = {(R + r * std::cos(ph)) * std::cos(th), (R + r * std::cos(ph)) * std::sin(th), r * std::sin(ph)};
  });
  return m;
}

}  // namespace

const char* primitive_name(Primitive kind) {
  switch (kind) {
    case Primitive::Box:
      return "box";
    case Primitive::Sphere:
      return "sphere";
    case Primitive::Cylinder:
      return "cylinder";
    case Primitive::Cone:
      return "cone";
    case Primitive::Torus:
      return "torus";
    default:
      return "?";
  }
}

Mesh make_primitive(Primitive kind, float uv_repeat) {
  Mesh m;
  switch (kind) {
    case Primitive::Box:
      m = make_box(uv_repeat);
      break;
    case Primitive::Sphere:
      m = make_sphere(uv_repeat);
      break;
    case Primitive::Cylinder:
      m = make_cylinder(uv_repeat);
      break;
    case Primitive::Cone:
      m = make_cone(uv_repeat);
      break;
    case Primitive::Torus:
      m = make_torus(uv_repeat);
      break;
    default:
      break;
  }
  m.materials.resize(1);
  return m;
}

}  // namespace ro
