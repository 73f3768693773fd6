// Toy-like assemblies: a deformed body with small plastic parts attached to its surface (issue 15's "deformed and
// combined shapes, realistic materials": closer to scanned toys and household objects than make_procedural_object).
#include <cmath>
#include <vector>

#include "photo_textures.h"
#include "procedural.h"
#include "texture.h"

namespace ro {

namespace {

// Plastic, painted-wood and rubber colours (sRGB), each jittered per part.
constexpr float kPalette[][3] = {
    {0.80f, 0.08f, 0.08f}, {0.96f, 0.78f, 0.05f}, {0.20f, 0.65f, 0.15f}, {0.10f, 0.30f, 0.80f}, {0.95f, 0.45f, 0.05f},
    {0.92f, 0.92f, 0.90f}, {0.08f, 0.08f, 0.08f}, {0.85f, 0.78f, 0.62f}, {0.45f, 0.28f, 0.15f}, {0.45f, 0.20f, 0.60f},
    {0.95f, 0.55f, 0.65f}, {0.55f, 0.55f, 0.55f}, {0.45f, 0.70f, 0.90f}, {0.10f, 0.35f, 0.15f}};
constexpr int kPaletteSize = static_cast<int>(sizeof kPalette / sizeof kPalette[0]);
// The body favours the neutral entries (white, beige, brown, grey), as in toys and household objects.
constexpr int kBodyColours[] = {5, 7, 8, 11, 7, 5, 0, 3};

float srgb_channel_to_linear(float c) { return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f); }

Rgba jittered_colour(int entry, Rng& rng) {
  float c[3];
  for (int k = 0; k < 3; ++k) {
    const float v = kPalette[entry][k] + rng.uniformf(-0.06f, 0.06f);
    c[k] = srgb_channel_to_linear(v < 0 ? 0 : (v > 1 ? 1 : v));
  }
  return Rgba{c[0], c[1], c[2], 1.0f};
}

// A plain colour (most parts) or a pattern tinted towards the colour; a plastic highlight on most. With
// photographs, a part may instead wear a photo crop (drawn after the rest, so that without photographs the draws,
// hence the objects, are the same as before photographs existed).
void paint(Material& mat, int entry, double pattern_chance, const PhotoLibrary* photos, double photo_chance, Rng& rng) {
  const Rgba colour = jittered_colour(entry, rng);
  const bool patterned = rng.chance(pattern_chance);
  const auto pattern = static_cast<Pattern>(rng.integer(0, static_cast<int>(Pattern::Count) - 1));
  if (patterned) {
    mat.texture = make_pattern_texture(pattern, rng, 128);
    mat.base_color = Rgba{0.5f + 0.5f * colour.r, 0.5f + 0.5f * colour.g, 0.5f + 0.5f * colour.b, 1.0f};
  } else {
    mat.base_color = colour;
  }
  const bool matte = rng.chance(0.3);
  const float specular = rng.uniformf(0.1f, 0.5f), shininess = rng.uniformf(10.0f, 80.0f);
  mat.specular = matte ? 0.0f : specular;
  mat.shininess = shininess;
  if (photos && !photos->empty()) {
    const bool photo = rng.chance(photo_chance);
    Rng crop_rng(rng.next());
    if (photo) {
      mat.texture = photos->random_crop(crop_rng);
      // Tinted lightly towards the part's colour (grey photographs such as textures take its hue).
      mat.base_color = Rgba{0.6f + 0.4f * colour.r, 0.6f + 0.4f * colour.g, 0.6f + 0.4f * colour.b, 1.0f};
    }
  }
}

// The rotation taking +z to the unit vector d (quaternion from the half-way vector).
Mat4 rotation_from_z(Vec3 d) {
  if (d.z < -0.9999f) return Mat4::rotation(1, 0, 0, 0);  // half a turn about x
  const Vec3 axis = cross(Vec3{0, 0, 1}, d);
  const double w = 1.0 + d.z, norm = std::sqrt(w * w + dot(axis, axis));
  return Mat4::rotation(axis.x / norm, axis.y / norm, axis.z / norm, w / norm);
}

// A point on the body's surface, area-weighted, with its face normal.
void surface_point(const Mesh& body, const std::vector<double>& cumulative_area, Rng& rng, Vec3& p, Vec3& n) {
  const double target = rng.uniform(0.0, cumulative_area.back());
  size_t lo = 0, hi = cumulative_area.size() - 1;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (cumulative_area[mid] < target)
      lo = mid + 1;
    else
      hi = mid;
  }
  const Vec3 a = body.positions[body.indices[3 * lo]], b = body.positions[body.indices[3 * lo + 1]],
             c = body.positions[body.indices[3 * lo + 2]];
  double u = rng.uniform(), v = rng.uniform();
  if (u + v > 1) u = 1 - u, v = 1 - v;
  p = a + (b - a) * static_cast<float>(u) + (c - a) * static_cast<float>(v);
  const Vec3 face = cross(b - a, c - a);
  n = length(face) > 1e-12f ? normalize(face) : Vec3{0, 0, 1};
  if (dot(n, p) < 0) n = n * -1.0f;  // outwards, roughly: away from the body's centre
}

std::vector<double> cumulative_areas(const Mesh& mesh) {
  std::vector<double> out(mesh.triangles());
  double sum = 0;
  for (size_t t = 0; t < mesh.triangles(); ++t) {
    const Vec3 a = mesh.positions[mesh.indices[3 * t]], b = mesh.positions[mesh.indices[3 * t + 1]],
               c = mesh.positions[mesh.indices[3 * t + 2]];
    sum += 0.5 * length(cross(b - a, c - a));
    out[t] = sum;
  }
  return out;
}

// 1-3 large parts: beams and plates (boxes), drums (cylinders), blobs (spheres), mostly upright.
Mesh make_body(const PhotoLibrary* photos, Rng& rng) {
  Mesh body;
  const int parts = rng.integer(1, 3);
  for (int i = 0; i < parts; ++i) {
    const double pick = rng.uniform();
    const Primitive kind = pick < 0.6 ? Primitive::Box : (pick < 0.85 ? Primitive::Cylinder : Primitive::Sphere);
    Mesh part = make_primitive(kind, static_cast<float>(rng.integer(1, 2)));
    paint(part.materials[0], kBodyColours[rng.integer(0, 7)], 0.4, photos, 0.35, rng);
    const bool deformed = rng.chance(0.5);
    if (deformed) deform_primitive(part, rng);
    // One long side, two shorter ones (beams, plates, slabs), in a random order.
    double s[3] = {rng.uniform(0.8, 1.6), rng.uniform(0.15, 0.6), rng.uniform(0.15, 0.6)};
    const int long_axis = rng.integer(0, 2);
    std::swap(s[0], s[long_axis]);
    const bool upright = rng.chance(0.7);
    const double angle = rng.uniform(0.0, 6.283185307179586);
    const Mat4 rotation =
        upright ? Mat4::rotation(0, 0, std::sin(0.5 * angle), std::cos(0.5 * angle)) : random_rotation(rng);
    double t[3];
    for (double& v : t) v = i == 0 ? 0.0 : rng.uniform(-0.4, 0.4);
    transform(part, Mat4::translation(t[0], t[1], t[2]) * rotation * Mat4::scale(s[0], s[1], s[2]));
    append(body, part);
  }
  return body;
}

// A small part: a knob, wheel, peg or cap (any primitive, 0.08-0.3 across), or a rod (a thin cylinder 0.4-1.2
// long), placed on the body's surface, sunk into it by a third of its size.
Mesh make_small_part(const Mesh& body, const std::vector<double>& areas, const PhotoLibrary* photos, Rng& rng) {
  Vec3 p, n;
  surface_point(body, areas, rng, p, n);
  const bool rod = rng.chance(0.2);
  const auto kind =
      rod ? Primitive::Cylinder : static_cast<Primitive>(rng.integer(0, static_cast<int>(Primitive::Count) - 1));
  Mesh part = make_primitive(kind, 1.0f);
  paint(part.materials[0], rng.integer(0, kPaletteSize - 1), 0.25, photos, 0.15, rng);
  const bool deformed = rng.chance(0.25);
  if (deformed) deform_primitive(part, rng);
  const double size = rng.uniform(0.08, 0.3), squash = rng.uniform(0.5, 1.0);
  const double length_ = rng.uniform(0.4, 1.2), thickness = rng.uniform(0.04, 0.1);
  // Rods lean in a random direction from the surface normal; other parts point along it (wheels, knobs).
  Vec3 dir = n;
  if (rod) {
    const Vec3 r{rng.uniformf(-1, 1), rng.uniformf(-1, 1), rng.uniformf(-1, 1)};
    dir = normalize(n + r * 1.2f);
  }
  const Mat4 scale = rod ? Mat4::scale(thickness, thickness, length_) : Mat4::scale(size, size, size * squash);
  const double sink = rod ? 0.3 * length_ : 0.3 * size * squash;
  const Vec3 at = p + dir * static_cast<float>(0.5 * (rod ? length_ : size * squash) - sink);
  transform(part, Mat4::translation(at.x, at.y, at.z) * rotation_from_z(dir) * scale);
  return part;
}

}  // namespace

Mesh make_assembly_object(uint64_t seed, const std::string& name, const PhotoLibrary* photos) {
  Rng rng(seed);
  Mesh object = make_body(photos, rng);
  object.name = name;
  const std::vector<double> areas = cumulative_areas(object);
  const int small_parts = rng.integer(6, 24);
  std::vector<Mesh> parts;
  for (int i = 0; i < small_parts; ++i) parts.push_back(make_small_part(object, areas, photos, rng));
  for (const Mesh& part : parts) append(object, part);
  normalize_to_unit_cube(object);
  return object;
}

}  // namespace ro
