// Smooth random deformations of unit primitives, and normals recomputed from the deformed triangles.
#include <cmath>
#include <map>
#include <tuple>

#include "procedural.h"

namespace ro {

namespace {

// Adds together the sums of vertices that sit at the same place (to 1e-5) with similar original normals: the
// duplicated seam of a tessellated sphere or cylinder (which must shade smoothly), but not a box's corners or a
// cylinder's rim, whose original normals differ by 90 degrees (which must stay sharp edges).
void weld_seams(const Mesh& mesh, std::vector<Vec3>& sum) {
  std::map<std::tuple<long, long, long>, std::vector<size_t>> at;
  for (size_t i = 0; i < mesh.positions.size(); ++i) {
    const Vec3 p = mesh.positions[i];
    at[{std::lround(p.x * 1e5f), std::lround(p.y * 1e5f), std::lround(p.z * 1e5f)}].push_back(i);
  }
  const std::vector<Vec3> own = sum;
  for (const auto& entry : at) {
    const std::vector<size_t>& group = entry.second;
    for (size_t i : group)
      for (size_t j : group)
        if (i != j && dot(mesh.normals[i], mesh.normals[j]) > 0.5f) sum[i] = sum[i] + own[j];
  }
}

}  // namespace

void recompute_normals(Mesh& mesh) {
  std::vector<Vec3> sum(mesh.positions.size(), Vec3{0, 0, 0});
  for (size_t t = 0; t < mesh.triangles(); ++t) {
    const uint32_t a = mesh.indices[3 * t], b = mesh.indices[3 * t + 1], c = mesh.indices[3 * t + 2];
    // Unnormalised: its length is twice the triangle's area, so larger triangles weigh more.
    const Vec3 n = cross(mesh.positions[b] - mesh.positions[a], mesh.positions[c] - mesh.positions[a]);
    sum[a] = sum[a] + n, sum[b] = sum[b] + n, sum[c] = sum[c] + n;
  }
  weld_seams(mesh, sum);
  for (size_t i = 0; i < sum.size(); ++i)
    if (length(sum[i]) > 1e-12f) {
      // Keep the primitive's outward orientation (its triangles' winding is not relied on).
      const Vec3 n = normalize(sum[i]);
      mesh.normals[i] = dot(n, mesh.normals[i]) < 0 ? n * -1.0f : n;
    }
}

void deform_primitive(Mesh& part, Rng& rng) {
  // Each deformation is drawn whether or not it is used, so the draws do not depend on earlier outcomes.
  const bool taper = rng.chance(0.4), twist = rng.chance(0.3), bend = rng.chance(0.3), bulge = rng.chance(0.4);
  const float k_taper = rng.uniformf(-0.6f, 0.6f);  // x, y scaled by 1 + k z, z in [-0.5, 0.5]
  const float k_twist = rng.uniformf(-2.0f, 2.0f);  // radians per unit of z
  const float k_bend = rng.uniformf(-0.8f, 0.8f);   // x offset k z^2
  const float amp = rng.uniformf(0.05f, 0.2f);
  float freq[3], phase[3];
  for (float& f : freq) f = rng.uniformf(3.0f, 9.0f);
  for (float& p : phase) p = rng.uniformf(0.0f, 6.2831853f);
  for (Vec3& p : part.positions) {
    if (bulge) {
      const float s = 1.0f + amp * std::sin(freq[0] * p.x + phase[0]) * std::sin(freq[1] * p.y + phase[1]) *
                                 std::sin(freq[2] * p.z + phase[2]);
      p = p * s;
    }
    if (taper) {
      const float s = 1.0f + k_taper * p.z;
      p.x *= s, p.y *= s;
    }
    if (twist) {
      const float a = k_twist * p.z, c = std::cos(a), s = std::sin(a);
      p = Vec3{c * p.x - s * p.y, s * p.x + c * p.y, p.z};
    }
    if (bend) p.x += k_bend * p.z * p.z;
  }
  if (taper || twist || bend || bulge) recompute_normals(part);
}

}  // namespace ro
