// Seeded random compositions of textured primitives.
#include "procedural.h"

#include <cmath>

namespace ro {

// A uniformly distributed rotation (Shoemake's method), or with probability 1/2 a rotation about z only so
// that the part stays upright.
Mat4 random_rotation(Rng& rng) {
  if (rng.chance(0.5)) {
    const double a = rng.uniform(0.0, kTwoPi);
    return Mat4::rotation(0, 0, std::sin(0.5 * a), std::cos(0.5 * a));
  }
  const double u1 = rng.uniform(), u2 = rng.uniform(), u3 = rng.uniform();
  const double s1 = std::sqrt(1 - u1), s2 = std::sqrt(u1);
  return Mat4::rotation(s1 * std::sin(kTwoPi * u2), s1 * std::cos(kTwoPi * u2), s2 * std::sin(kTwoPi * u3),
                        s2 * std::cos(kTwoPi * u3));
}

Mesh make_procedural_object(uint64_t seed, const std::string& name) {
  Rng rng(seed);
  Mesh object;
  object.name = name;
  const int parts = rng.integer(2, 6);
  for (int i = 0; i < parts; ++i) {
    const auto kind = static_cast<Primitive>(rng.integer(0, static_cast<int>(Primitive::Count) - 1));
    Mesh part = make_primitive(kind, static_cast<float>(rng.integer(1, 3)));
    Material& mat = part.materials[0];
    const auto pattern = static_cast<Pattern>(rng.integer(0, static_cast<int>(Pattern::Count) - 1));
    mat.texture = make_pattern_texture(pattern, rng, 256);
    if (rng.chance(0.3))
      mat.base_color = {rng.uniformf(0.7f, 1.0f), rng.uniformf(0.7f, 1.0f), rng.uniformf(0.7f, 1.0f), 1.0f};
    // (Draws are sequenced one per statement: the order of function arguments is unspecified in C++.)
    double s[3], t[3];
    for (double& v : s) v = rng.uniform(0.3, 1.0);
    const Mat4 rotation = random_rotation(rng);
    // The first part sits at the centre; later ones are offset so that most still touch or overlap it.
    const double spread = i == 0 ? 0.0 : 0.5;
    for (double& v : t) v = rng.uniform(-spread, spread);
    const Mat4 scale = Mat4::scale(s[0], s[1], s[2]);
    const Mat4 translation = Mat4::translation(t[0], t[1], t[2]);
    transform(part, translation * rotation * scale);
    append(object, part);
  }
  normalize_to_unit_cube(object);
  return object;
}

}  // namespace ro
