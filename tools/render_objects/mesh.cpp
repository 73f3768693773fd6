#include "mesh.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ro {

Bounds bounds(const Mesh& mesh) {
  Bounds b;
  for (uint32_t i : mesh.indices) {
    const Vec3& p = mesh.positions[i];
    b.lo = {std::min(b.lo.x, p.x), std::min(b.lo.y, p.y), std::min(b.lo.z, p.z)};
    b.hi = {std::max(b.hi.x, p.x), std::max(b.hi.y, p.y), std::max(b.hi.z, p.z)};
  }
  return b;
}

void transform(Mesh& mesh, const Mat4& m) {
  for (Vec3& p : mesh.positions) p = m.point(p);
  for (Vec3& n : mesh.normals) n = m.normal(n);
}

void append(Mesh& dst, const Mesh& src) {
  const auto vbase = static_cast<uint32_t>(dst.positions.size());
  const auto mbase = static_cast<uint32_t>(dst.materials.size());
  dst.positions.insert(dst.positions.end(), src.positions.begin(), src.positions.end());
  dst.normals.insert(dst.normals.end(), src.normals.begin(), src.normals.end());
  dst.uvs.insert(dst.uvs.end(), src.uvs.begin(), src.uvs.end());
  for (uint32_t i : src.indices) dst.indices.push_back(i + vbase);
  for (uint32_t m : src.tri_material) dst.tri_material.push_back(m + mbase);
  dst.materials.insert(dst.materials.end(), src.materials.begin(), src.materials.end());
}

Mat4 normalize_to_unit_cube(Mesh& mesh, double fill) {
  const Bounds b = bounds(mesh);
  if (b.empty()) throw std::runtime_error("the mesh has no triangles");
  const double ex = static_cast<double>(b.hi.x) - b.lo.x, ey = static_cast<double>(b.hi.y) - b.lo.y,
               ez = static_cast<double>(b.hi.z) - b.lo.z;
  const double extent = std::max({ex, ey, ez});
  if (!(extent > 0) || !(extent < 1e30)) throw std::runtime_error("the mesh has a degenerate or infinite bounding box");
  const double s = 2.0 * fill / extent;
  const Mat4 m = Mat4::scale(s, s, s) * Mat4::translation(-0.5 * (static_cast<double>(b.lo.x) + b.hi.x),
                                                          -0.5 * (static_cast<double>(b.lo.y) + b.hi.y),
                                                          -0.5 * (static_cast<double>(b.lo.z) + b.hi.z));
  transform(mesh, m);
  return m;
}

Mat4 normalize_to_unit_sphere(Mesh& mesh, double radius) {
  const Bounds b = bounds(mesh);
  if (b.empty()) throw std::runtime_error("the mesh has no triangles");
  const double c[3] = {0.5 * (static_cast<double>(b.lo.x) + b.hi.x), 0.5 * (static_cast<double>(b.lo.y) + b.hi.y),
                       0.5 * (static_cast<double>(b.lo.z) + b.hi.z)};
  double r2 = 0;
  for (uint32_t i : mesh.indices) {
    const Vec3& p = mesh.positions[i];
    const double dx = p.x - c[0], dy = p.y - c[1], dz = p.z - c[2];
    r2 = std::max(r2, dx * dx + dy * dy + dz * dz);
  }
  if (!(r2 > 0) || !(r2 < 1e60)) throw std::runtime_error("the mesh has a degenerate or infinite extent");
  const double s = radius / std::sqrt(r2);
  const Mat4 m = Mat4::scale(s, s, s) * Mat4::translation(-c[0], -c[1], -c[2]);
  transform(mesh, m);
  return m;
}

void validate(const Mesh& mesh) {
  const size_t n = mesh.positions.size();
  if (mesh.normals.size() != n || mesh.uvs.size() != n) throw std::runtime_error("mesh attribute sizes differ");
  if (mesh.indices.size() % 3 != 0) throw std::runtime_error("index count is not a multiple of 3");
  if (mesh.tri_material.size() != mesh.triangles()) throw std::runtime_error("one material id per triangle expected");
  for (uint32_t i : mesh.indices)
    if (i >= n) throw std::runtime_error("vertex index out of range");
  for (uint32_t m : mesh.tri_material)
    if (m >= mesh.materials.size()) throw std::runtime_error("material index out of range");
}

}  // namespace ro
