// Small fixed-size vector and matrix types for the renderer (float vectors, double 4x4 matrices).
#pragma once

#include <cmath>

namespace ro {

// pi, once: double for the cameras and rotations, float for the meshes' vertices.
inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kTwoPi = 2 * kPi;
inline constexpr float kPiF = static_cast<float>(kPi);
inline constexpr float kTwoPiF = static_cast<float>(kTwoPi);

struct Vec2 {
  float x = 0, y = 0;
};

struct Vec3 {
  float x = 0, y = 0, z = 0;
  Vec3() = default;
  Vec3(float x_, float y_, float z_) : x(x_), y(y_), z(z_) {}
  float operator[](int i) const { return i == 0 ? x : (i == 1 ? y : z); }
  float& operator[](int i) { return i == 0 ? x : (i == 1 ? y : z); }
};

inline Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
inline Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
inline Vec3 operator*(Vec3 a, float s) { return {a.x * s, a.y * s, a.z * s}; }
inline Vec3 operator*(float s, Vec3 a) { return a * s; }
inline Vec3 mul(Vec3 a, Vec3 b) { return {a.x * b.x, a.y * b.y, a.z * b.z}; }
inline float dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
inline Vec3 cross(Vec3 a, Vec3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
inline float length(Vec3 a) { return std::sqrt(dot(a, a)); }
inline Vec3 normalize(Vec3 a) {
  const float l = length(a);
  return l > 1e-20f ? a * (1.0f / l) : Vec3{0, 0, 1};
}

// Row-major 4x4 matrix in double precision: m[r][c]. Points are column vectors (p' = M p).
struct Mat4 {
  double m[4][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};

  static Mat4 identity() { return Mat4{}; }
  static Mat4 translation(double x, double y, double z) {
    Mat4 t;
    t.m[0][3] = x, t.m[1][3] = y, t.m[2][3] = z;
    return t;
  }
  static Mat4 scale(double x, double y, double z) {
    Mat4 t;
    t.m[0][0] = x, t.m[1][1] = y, t.m[2][2] = z;
    return t;
  }
  // Rotation from a unit quaternion (x, y, z, w).
  static Mat4 rotation(double x, double y, double z, double w) {
    Mat4 r;
    r.m[0][0] = 1 - 2 * (y * y + z * z), r.m[0][1] = 2 * (x * y - z * w), r.m[0][2] = 2 * (x * z + y * w);
    r.m[1][0] = 2 * (x * y + z * w), r.m[1][1] = 1 - 2 * (x * x + z * z), r.m[1][2] = 2 * (y * z - x * w);
    r.m[2][0] = 2 * (x * z - y * w), r.m[2][1] = 2 * (y * z + x * w), r.m[2][2] = 1 - 2 * (x * x + y * y);
    return r;
  }

  Vec3 point(Vec3 p) const {
    return {static_cast<float>(m[0][0] * p.x + m[0][1] * p.y + m[0][2] * p.z + m[0][3]),
            static_cast<float>(m[1][0] * p.x + m[1][1] * p.y + m[1][2] * p.z + m[1][3]),
            static_cast<float>(m[2][0] * p.x + m[2][1] * p.y + m[2][2] * p.z + m[2][3])};
  }
  Vec3 vector(Vec3 v) const {
    return {static_cast<float>(m[0][0] * v.x + m[0][1] * v.y + m[0][2] * v.z),
            static_cast<float>(m[1][0] * v.x + m[1][1] * v.y + m[1][2] * v.z),
            static_cast<float>(m[2][0] * v.x + m[2][1] * v.y + m[2][2] * v.z)};
  }
  // Transforms a normal by the inverse transpose of the upper 3x3, i.e. by the cofactor matrix times sign(det)
  // (the scale does not matter because the result is normalised).
  Vec3 normal(Vec3 n) const {
    const double c00 = m[1][1] * m[2][2] - m[1][2] * m[2][1], c01 = m[1][2] * m[2][0] - m[1][0] * m[2][2],
                 c02 = m[1][0] * m[2][1] - m[1][1] * m[2][0];
    const double c10 = m[0][2] * m[2][1] - m[0][1] * m[2][2], c11 = m[0][0] * m[2][2] - m[0][2] * m[2][0],
                 c12 = m[0][1] * m[2][0] - m[0][0] * m[2][1];
    const double c20 = m[0][1] * m[1][2] - m[0][2] * m[1][1], c21 = m[0][2] * m[1][0] - m[0][0] * m[1][2],
                 c22 = m[0][0] * m[1][1] - m[0][1] * m[1][0];
    const double det = m[0][0] * c00 + m[0][1] * c01 + m[0][2] * c02;
    const double s = det < 0 ? -1.0 : 1.0;  // keep the orientation for mirrored transforms
    return normalize(Vec3{static_cast<float>(s * (c00 * n.x + c01 * n.y + c02 * n.z)),
                          static_cast<float>(s * (c10 * n.x + c11 * n.y + c12 * n.z)),
                          static_cast<float>(s * (c20 * n.x + c21 * n.y + c22 * n.z))});
  }
};

inline Mat4 operator*(const Mat4& a, const Mat4& b) {
  Mat4 r;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += a.m[i][k] * b.m[k][j];
      r.m[i][j] = s;
    }
  return r;
}

// Inverse of a rigid transform [R t; 0 1] (R orthonormal).
inline Mat4 rigid_inverse(const Mat4& a) {
  Mat4 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r.m[i][j] = a.m[j][i];
  for (int i = 0; i < 3; ++i) r.m[i][3] = -(r.m[i][0] * a.m[0][3] + r.m[i][1] * a.m[1][3] + r.m[i][2] * a.m[2][3]);
  return r;
}

}  // namespace ro
