// Checks of the assembly style (issue 15's toy-like training objects): normalisation, part counts, determinism,
// the object list's names and seeds, the deformations, recomputed normals and the Blinn-Phong highlight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cameras.h"
#include "objects.h"
#include "procedural.h"
#include "rasterizer.h"

using namespace ro;

namespace {

// sRGB encoding of a linear value, written out here (not the renderer's table) as the test's own reference.
double srgb_byte(double linear) {
  const double c = std::min(1.0, std::max(0.0, linear));
  const double s = c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1.0 / 2.4) - 0.055;
  return 255.0 * s;
}

}  // namespace

TEST(Assembly, ObjectsAreNormalisedMultiPartAndDeterministic) {
  size_t plain = 0, materials = 0, shiny = 0;
  for (uint64_t s = 0; s < 20; ++s) {
    const Mesh m = make_assembly_object(s, "x");
    validate(m);
    const Bounds b = bounds(m);
    const float extent = std::max({b.hi.x - b.lo.x, b.hi.y - b.lo.y, b.hi.z - b.lo.z});
    EXPECT_NEAR(extent, 2.0f, 1e-4f);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(b.lo[k] + b.hi[k], 0.0f, 1e-4f);
    // 1-3 body parts and 6-24 small parts, one material each.
    EXPECT_GE(m.materials.size(), 7u);
    EXPECT_LE(m.materials.size(), 27u);
    for (const Material& mat : m.materials) {
      plain += mat.texture ? 0 : 1;
      shiny += mat.specular > 0 ? 1 : 0;
      materials += 1;
    }
    const Mesh again = make_assembly_object(s, "x");
    ASSERT_EQ(again.positions.size(), m.positions.size());
    EXPECT_TRUE(std::equal(m.positions.begin(), m.positions.end(), again.positions.begin(),
                           [](Vec3 a, Vec3 c) { return a.x == c.x && a.y == c.y && a.z == c.z; }));
  }
  // Mostly plain plastic colours, mostly shiny (the draws: 65-75% plain, 70% shiny).
  EXPECT_GT(plain, materials / 2);
  EXPECT_GT(shiny, materials / 2);
  EXPECT_LT(shiny, materials);
}

TEST(Assembly, ListedWithTheirOwnNamesAndSeeds) {
  const auto prims = list_objects(3, 5, 42, {});
  const auto assemblies = list_objects(3, 5, 42, {}, ProceduralStyle::Assembly);
  ASSERT_EQ(assemblies.size(), 3u);
  EXPECT_EQ(assemblies[0].name, "asm_42_000005");
  EXPECT_EQ(assemblies[2].name, "asm_42_000007");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(assemblies[i].style, ProceduralStyle::Assembly);
    EXPECT_NE(assemblies[i].seed, prims[i].seed);
    EXPECT_EQ(lighting_style(assemblies[i]), LightingStyle::Soft);
    EXPECT_EQ(lighting_style(prims[i]), LightingStyle::Directional);
  }
  // Object i is the same whatever the range it is listed in.
  EXPECT_EQ(list_objects(1, 6, 42, {}, ProceduralStyle::Assembly)[0].seed, assemblies[1].seed);
}

TEST(Assembly, DeformedPrimitivesStayBoundedWithUnitNormals) {
  int changed = 0;
  for (uint64_t s = 0; s < 40; ++s) {
    for (int k = 0; k < static_cast<int>(Primitive::Count); ++k) {
      Mesh m = make_primitive(static_cast<Primitive>(k));
      const std::vector<Vec3> before = m.positions;
      Rng rng(s);
      deform_primitive(m, rng);
      validate(m);
      const Bounds b = bounds(m);
      for (int a = 0; a < 3; ++a) {
        EXPECT_GE(b.lo[a], -1.5f);
        EXPECT_LE(b.hi[a], 1.5f);
      }
      for (const Vec3& n : m.normals) EXPECT_NEAR(length(n), 1.0f, 1e-4f);
      changed += m.positions[0].x != before[0].x || m.positions[0].z != before[0].z ? 1 : 0;
    }
  }
  EXPECT_GT(changed, 40);  // most draws deform (each of four deformations has a 30-40% chance)
}

// On an undeformed sphere the recomputed normals agree with the analytic ones (the unit sphere's position).
TEST(Assembly, RecomputedNormalsMatchTheSphere) {
  Mesh m = make_primitive(Primitive::Sphere);
  recompute_normals(m);
  for (size_t i = 0; i < m.positions.size(); ++i) {
    const Vec3 p = m.positions[i];
    if (std::fabs(p.z) > 0.49f) continue;  // the poles' fan of degenerate grid cells
    EXPECT_GT(dot(m.normals[i], normalize(p)), 0.995f) << "vertex " << i;
  }
}

// Light from the camera: at the centre of a sphere facing it, n = l = v = h, so the pixel is
// albedo (ambient + diffuse) + specular * diffuse, in linear colour (hand-computed, then sRGB-encoded).
TEST(Assembly, SpecularHighlightIsBlinnPhong) {
  const Camera cam = orbit_camera(0, 0, 2.7, 129, 129, 50);
  Lighting light;
  light.direction = Vec3{1, 0, 0};
  light.ambient = 0.3f, light.diffuse = 0.5f;
  for (float specular : {0.0f, 0.4f}) {
    Mesh m = make_primitive(Primitive::Sphere);
    m.materials[0].base_color = Rgba{0.2f, 0.2f, 0.2f, 1};
    m.materials[0].specular = specular;
    m.materials[0].shininess = 32;
    Rasterizer r(1);
    Image img;
    r.render(m, cam, light, img);
    const uint8_t* centre = &img.rgba[(static_cast<size_t>(64) * 129 + 64) * 4];
    const double expected = srgb_byte(0.2 * (0.3 + 0.5) + specular * 0.5);
    EXPECT_NEAR(centre[0], expected, 1.5) << "specular " << specular;
    EXPECT_EQ(centre[3], 255);
  }
}
