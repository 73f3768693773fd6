#include "rasterizer.h"

#include <algorithm>
#include <cmath>

#include "rng.h"

namespace ro {

namespace {

constexpr float kNear = 1e-3f;  // camera-space near plane (world units)

struct ClipVertex {
  Vec3 p;      // camera space
  float b[3];  // barycentric coordinates in the original triangle
};

struct ScreenVertex {
  double x, y;  // supersampled pixel coordinates
  float iz;     // 1 / camera z
  float b[3];
};

// Top-left style tie-break: of the two triangles sharing an edge (traversed in opposite directions once both are
// counter-clockwise in screen space) exactly one owns samples lying exactly on it.
inline bool owns_edge(double dx, double dy) { return dy < 0 || (dy == 0 && dx > 0); }

// The sample buffers a triangle is drawn into (supersampled width x height).
struct Samples {
  int width, height;
  std::vector<float>& inv_z;
  std::vector<int32_t>& tri;
  std::vector<float>& b1;
  std::vector<float>& b2;
};

// Draws one screen-space triangle with a depth test (nearest 1/z wins) and the top-left rule on shared edges.
void raster_triangle(ScreenVertex v0, ScreenVertex v1, ScreenVertex v2, int32_t tri, Samples out) {
  double area = (v1.x - v0.x) * (v2.y - v0.y) - (v1.y - v0.y) * (v2.x - v0.x);
  if (!(std::fabs(area) > 1e-12)) return;  // degenerate, or NaN
  if (area < 0) std::swap(v1, v2), area = -area;
  const double minx = std::min({v0.x, v1.x, v2.x}), maxx = std::max({v0.x, v1.x, v2.x});
  const double miny = std::min({v0.y, v1.y, v2.y}), maxy = std::max({v0.y, v1.y, v2.y});
  // Samples sit at (i + 0.5, j + 0.5).
  const int x0 = static_cast<int>(std::max(0.0, std::ceil(minx - 0.5)));
  const int x1 = static_cast<int>(std::min(static_cast<double>(out.width - 1), std::floor(maxx - 0.5)));
  const int y0 = static_cast<int>(std::max(0.0, std::ceil(miny - 0.5)));
  const int y1 = static_cast<int>(std::min(static_cast<double>(out.height - 1), std::floor(maxy - 0.5)));
  if (x0 > x1 || y0 > y1) return;
  // Edge e_k is opposite vertex k: w_k(p) = cross(b - a, p - a) for the edge a -> b.
  const ScreenVertex* a[3] = {&v1, &v2, &v0};
  const ScreenVertex* b[3] = {&v2, &v0, &v1};
  double dx[3], dy[3];
  bool own[3];
  for (int k = 0; k < 3; ++k) {
    dx[k] = b[k]->x - a[k]->x, dy[k] = b[k]->y - a[k]->y;
    own[k] = owns_edge(dx[k], dy[k]);
  }
  const double inv_area = 1.0 / area;
  for (int y = y0; y <= y1; ++y) {
    const double py = y + 0.5;
    const double px0 = x0 + 0.5;
    double w[3];
    for (int k = 0; k < 3; ++k) w[k] = dx[k] * (py - a[k]->y) - dy[k] * (px0 - a[k]->x);
    size_t s = static_cast<size_t>(y) * out.width + x0;
    for (int x = x0; x <= x1; ++x, ++s, w[0] -= dy[0], w[1] -= dy[1], w[2] -= dy[2]) {
      if (w[0] < 0 || w[1] < 0 || w[2] < 0) continue;
      if ((w[0] == 0 && !own[0]) || (w[1] == 0 && !own[1]) || (w[2] == 0 && !own[2])) continue;
      const float l0 = static_cast<float>(w[0] * inv_area), l1 = static_cast<float>(w[1] * inv_area),
                  l2 = static_cast<float>(w[2] * inv_area);
      const float iz = l0 * v0.iz + l1 * v1.iz + l2 * v2.iz;
      if (!(iz > out.inv_z[s])) continue;
      // Perspective-correct weights of the three screen vertices, then barycentrics in the original triangle.
      const float p0 = l0 * v0.iz / iz, p1 = l1 * v1.iz / iz, p2 = l2 * v2.iz / iz;
      out.inv_z[s] = iz;
      out.tri[s] = tri;
      out.b1[s] = p0 * v0.b[1] + p1 * v1.b[1] + p2 * v2.b[1];
      out.b2[s] = p0 * v0.b[2] + p1 * v1.b[2] + p2 * v2.b[2];
    }
  }
}

// Clips a camera-space triangle against z = near (Sutherland-Hodgman with one plane): at most 4 vertices.
int clip_near(const ClipVertex c[3], ClipVertex poly[4]) {
  int n = 0;
  for (int k = 0; k < 3; ++k) {
    const ClipVertex& p = c[k];
    const ClipVertex& q = c[(k + 1) % 3];
    const bool pin = p.p.z >= kNear, qin = q.p.z >= kNear;
    if (pin) poly[n++] = p;
    if (pin != qin) {
      const float s = (kNear - p.p.z) / (q.p.z - p.p.z);
      ClipVertex m;
      m.p = p.p + (q.p - p.p) * s;
      m.p.z = kNear;
      for (int j = 0; j < 3; ++j) m.b[j] = p.b[j] + (q.b[j] - p.b[j]) * s;
      poly[n++] = m;
    }
  }
  return n;
}

// Level of detail: texels per sample, from the triangle's UV area against its screen area (0 when either is 0).
float texture_lod(const Vec2& u0, const Vec2& u1, const Vec2& u2, const Texture& texture, const ScreenVertex& s0,
                  const ScreenVertex& s1, const ScreenVertex& s2) {
  const double uv_area =
      std::fabs((u1.x - u0.x) * (u2.y - u0.y) - (u1.y - u0.y) * (u2.x - u0.x)) * texture.width() * texture.height();
  const double px_area = std::fabs((s1.x - s0.x) * (s2.y - s0.y) - (s1.y - s0.y) * (s2.x - s0.x));
  if (!(uv_area > 0 && px_area > 0)) return 0.0f;
  return static_cast<float>(std::max(0.0, 0.5 * std::log2(uv_area / px_area)));
}

}  // namespace

Lighting random_lighting(uint64_t seed, LightingStyle style) {
  Rng rng(seed);
  Lighting l;
  const double z = rng.uniform(0.1, 1.0), az = rng.uniform(0.0, 2.0 * 3.14159265358979323846);
  const double r = std::sqrt(std::max(0.0, 1.0 - z * z));
  l.direction = Vec3{static_cast<float>(r * std::cos(az)), static_cast<float>(r * std::sin(az)), static_cast<float>(z)};
  const bool soft = style == LightingStyle::Soft;
  l.ambient = soft ? rng.uniformf(0.5f, 0.7f) : rng.uniformf(0.3f, 0.5f);
  l.diffuse = soft ? rng.uniformf(0.3f, 0.5f) : rng.uniformf(0.5f, 0.8f);
  return l;
}

void Rasterizer::render(const Mesh& mesh, const Camera& cam, const Lighting& light, Image& out) {
  rasterize(mesh, cam);
  resolve(mesh, cam, light, out);
}

void Rasterizer::rasterize(const Mesh& mesh, const Camera& cam) {
  sw_ = cam.width * ss_, sh_ = cam.height * ss_;
  const size_t samples = static_cast<size_t>(sw_) * sh_;
  inv_z_.assign(samples, 0.0f);
  tri_.assign(samples, -1);
  b1_.resize(samples), b2_.resize(samples);
  lod_.assign(mesh.triangles(), 0.0f);

  cam_pos_.resize(mesh.positions.size());
  for (size_t i = 0; i < mesh.positions.size(); ++i) cam_pos_[i] = cam.w2c.point(mesh.positions[i]);

  const double fx = cam.fx * ss_, fy = cam.fy * ss_, cx = cam.cx * ss_, cy = cam.cy * ss_;
  auto project = [&](const ClipVertex& v) {
    ScreenVertex s;
    s.x = fx * v.p.x / v.p.z + cx;
    s.y = fy * v.p.y / v.p.z + cy;
    s.iz = 1.0f / v.p.z;
    s.b[0] = v.b[0], s.b[1] = v.b[1], s.b[2] = v.b[2];
    return s;
  };

  const Samples samples_out{sw_, sh_, inv_z_, tri_, b1_, b2_};
  const size_t ntri = mesh.triangles();
  for (size_t t = 0; t < ntri; ++t) {
    const uint32_t i0 = mesh.indices[3 * t], i1 = mesh.indices[3 * t + 1], i2 = mesh.indices[3 * t + 2];
    const ClipVertex c[3] = {{cam_pos_[i0], {1, 0, 0}}, {cam_pos_[i1], {0, 1, 0}}, {cam_pos_[i2], {0, 0, 1}}};
    const int in = (c[0].p.z >= kNear) + (c[1].p.z >= kNear) + (c[2].p.z >= kNear);
    if (in == 0) continue;
    const auto tri = static_cast<int32_t>(t);
    if (in == 3) {
      const ScreenVertex s0 = project(c[0]), s1 = project(c[1]), s2 = project(c[2]);
      const Material& mat = mesh.materials[mesh.tri_material[t]];
      if (mat.texture) lod_[t] = texture_lod(mesh.uvs[i0], mesh.uvs[i1], mesh.uvs[i2], *mat.texture, s0, s1, s2);
      raster_triangle(s0, s1, s2, tri, samples_out);
      continue;
    }
    ClipVertex poly[4];
    const int n = clip_near(c, poly);
    for (int k = 1; k + 1 < n; ++k)
      raster_triangle(project(poly[0]), project(poly[k]), project(poly[k + 1]), tri, samples_out);
  }
}

void Rasterizer::resolve(const Mesh& mesh, const Camera& cam, const Lighting& light, Image& out) {
  out.width = cam.width, out.height = cam.height;
  out.rgba.assign(static_cast<size_t>(out.width) * out.height * 4, 0);
  const Mat4 c2w = cam.c2w();
  const Vec3 eye{static_cast<float>(c2w.m[0][3]), static_cast<float>(c2w.m[1][3]), static_cast<float>(c2w.m[2][3])};
  const Vec3 L = normalize(light.direction);
  const float inv_samples = 1.0f / static_cast<float>(ss_ * ss_);
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) {
      int hits = 0;
      float r = 0, g = 0, b = 0;
      for (int sy = 0; sy < ss_; ++sy)
        for (int sx = 0; sx < ss_; ++sx) {
          const size_t s = static_cast<size_t>(y * ss_ + sy) * sw_ + (x * ss_ + sx);
          const int32_t t = tri_[s];
          if (t < 0) continue;
          ++hits;
          const uint32_t i0 = mesh.indices[3 * t], i1 = mesh.indices[3 * t + 1], i2 = mesh.indices[3 * t + 2];
          const float w1 = b1_[s], w2 = b2_[s], w0 = 1.0f - w1 - w2;
          Vec3 n = normalize(mesh.normals[i0] * w0 + mesh.normals[i1] * w1 + mesh.normals[i2] * w2);
          const Vec3 p = mesh.positions[i0] * w0 + mesh.positions[i1] * w1 + mesh.positions[i2] * w2;
          if (dot(n, eye - p) < 0) n = n * -1.0f;  // two-sided: light the side we see
          const Material& mat = mesh.materials[mesh.tri_material[t]];
          Rgba albedo = mat.base_color;
          if (mat.texture) {
            const float u = mesh.uvs[i0].x * w0 + mesh.uvs[i1].x * w1 + mesh.uvs[i2].x * w2;
            const float v = mesh.uvs[i0].y * w0 + mesh.uvs[i1].y * w1 + mesh.uvs[i2].y * w2;
            const Rgba tex = mat.texture->sample(u, v, lod_[t], mat.wrap_s, mat.wrap_t);
            albedo.r *= tex.r, albedo.g *= tex.g, albedo.b *= tex.b;
          }
          const float n_dot_l = dot(n, L);
          const float shade = light.ambient + light.diffuse * std::max(0.0f, n_dot_l);
          r += albedo.r * shade, g += albedo.g * shade, b += albedo.b * shade;
          if (mat.specular > 0.0f && n_dot_l > 0.0f) {
            const Vec3 h = normalize(L + normalize(eye - p));
            const float highlight = mat.specular * light.diffuse * std::pow(std::max(0.0f, dot(n, h)), mat.shininess);
            r += highlight, g += highlight, b += highlight;
          }
        }
      uint8_t* px = &out.rgba[(static_cast<size_t>(y) * out.width + x) * 4];
      if (hits == 0) {
        px[0] = px[1] = px[2] = 255, px[3] = 0;
        continue;
      }
      const float inv = 1.0f / static_cast<float>(hits);
      px[0] = linear_to_srgb(r * inv), px[1] = linear_to_srgb(g * inv), px[2] = linear_to_srgb(b * inv);
      px[3] = static_cast<uint8_t>(std::lround(255.0f * static_cast<float>(hits) * inv_samples));
    }
}

}  // namespace ro
