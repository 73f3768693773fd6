// Checks of the assembly style (issue 15's toy-like training objects): normalisation, part counts, determinism,
// the object list's names and seeds, the deformations, recomputed normals, the Blinn-Phong highlight and photo
// textures.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "cameras.h"
#include "objects.h"
#include "photo_textures.h"
#include "procedural.h"
#include "rasterizer.h"
#include "writer.h"

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

// A photograph whose colour encodes the position: red = x, green = y. A crop of it must be a monotone window
// (red rising left to right, or falling when mirrored; green rising downwards), inside the photo's range.
TEST(Assembly, PhotoCropsAreWindowsOfThePhoto) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("ro_photos_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  Image photo;
  photo.width = 256, photo.height = 200;
  photo.rgba.resize(static_cast<size_t>(photo.width) * photo.height * 4);
  for (int y = 0; y < photo.height; ++y)
    for (int x = 0; x < photo.width; ++x) {
      uint8_t* p = &photo.rgba[(static_cast<size_t>(y) * photo.width + x) * 4];
      p[0] = static_cast<uint8_t>(x), p[1] = static_cast<uint8_t>(y), p[2] = 77, p[3] = 255;
    }
  write_file(dir + "/gradient.png", encode_png(photo));
  const PhotoLibrary library = PhotoLibrary::load({dir});
  ASSERT_EQ(library.size(), 1u);
  Rng rng(5);
  for (int i = 0; i < 10; ++i) {
    const auto tex = library.random_crop(rng, 32);
    ASSERT_TRUE(tex);
    ASSERT_EQ(tex->width(), 32);
    auto texel = [&](int x, int y) {
      return tex->sample_level((x + 0.5f) / 32, (y + 0.5f) / 32, 0, Wrap::Clamp, Wrap::Clamp);
    };
    // Green (the photo's y) rises downwards; red (x) changes monotonically across; blue stays 77.
    EXPECT_LT(texel(16, 2).g, texel(16, 29).g);
    EXPECT_NE(texel(2, 16).r, texel(29, 16).r);
    EXPECT_NEAR(texel(10, 10).b, srgb_to_linear(77), 0.01f);
  }
  EXPECT_THROW(PhotoLibrary::load({dir + "/missing.png"}), std::runtime_error);
  write_file(dir + "/broken.png", {1, 2, 3});
  EXPECT_THROW(PhotoLibrary::load({dir}), std::runtime_error);
  std::filesystem::remove_all(dir);
}

// An empty photo library draws nothing extra: the objects equal those made without one (the shards made before
// photographs existed stay reproducible).
TEST(Assembly, AnEmptyPhotoLibraryChangesNothing) {
  const PhotoLibrary none;
  for (uint64_t s = 0; s < 5; ++s) {
    const Mesh a = make_assembly_object(s, "x"), b = make_assembly_object(s, "x", &none);
    ASSERT_EQ(a.positions.size(), b.positions.size());
    for (size_t i = 0; i < a.positions.size(); ++i) ASSERT_EQ(a.positions[i].x, b.positions[i].x);
  }
}
