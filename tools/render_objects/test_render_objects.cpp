// Checks of render_objects: the camera convention (projection of a rendered sphere against the written cameras),
// determinism, the fixed64 layout, face orientation, the shard file, and a real glTF file when available.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cameras.h"
#include "gltf_loader.h"
#include "objects.h"
#include "procedural.h"
#include "rasterizer.h"
#include "shard.h"
#include "writer.h"

namespace fs = std::filesystem;
using namespace ro;

namespace {

Mesh sphere_at(Vec3 centre, float radius, Rgba colour) {
  Mesh m = make_primitive(Primitive::Sphere);
  transform(m, Mat4::translation(centre.x, centre.y, centre.z) * Mat4::scale(2 * radius, 2 * radius, 2 * radius));
  m.materials[0].base_color = colour;
  return m;
}

// Alpha-weighted centroid in continuous pixel coordinates (pixel i spans [i, i+1], centre i + 0.5).
bool alpha_centroid(const Image& img, double& u, double& v) {
  double sum = 0, su = 0, sv = 0;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      const double a = img.rgba[(static_cast<size_t>(y) * img.width + x) * 4 + 3] / 255.0;
      sum += a, su += a * (x + 0.5), sv += a * (y + 0.5);
    }
  if (sum <= 0) return false;
  u = su / sum, v = sv / sum;
  return true;
}

std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("render_objects_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

}  // namespace

// (1) A small sphere at a known off-centre point lands where the pinhole model with the *written* cameras puts it.
TEST(RenderObjects, SphereProjectsWhereTheWrittenCameraSays) {
  const Vec3 P{0.35f, -0.45f, 0.3f};
  const Mesh mesh = sphere_at(P, 0.06f, {1, 1, 1, 1});
  ViewSpec random = parse_view_spec("random:6");
  std::vector<Camera> cams = make_views(parse_view_spec("fixed64"), 160, 160, 0);
  const std::vector<Camera> extra = make_views(random, 160, 160, 1234);
  cams = {cams[0], cams[5], cams[21], cams[42], cams[63]};
  cams.insert(cams.end(), extra.begin(), extra.end());
  const std::string dir = temp_dir("proj");
  Rasterizer r(4);
  std::vector<Image> images(cams.size());
  for (size_t i = 0; i < cams.size(); ++i) r.render(mesh, cams[i], Lighting{}, images[i]);
  write_object_folder(dir, cams, images);

  std::ifstream f(dir + "/opencv_cameras.json");
  const nlohmann::json frames = nlohmann::json::parse(f);
  ASSERT_EQ(frames.size(), cams.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    const nlohmann::json& fr = frames[i];
    const double fx = fr["fx"], fy = fr["fy"], cx = fr["cx"], cy = fr["cy"];
    double pc[3];
    for (int k = 0; k < 3; ++k)
      pc[k] = fr["w2c"][k][0].get<double>() * P.x + fr["w2c"][k][1].get<double>() * P.y +
              fr["w2c"][k][2].get<double>() * P.z + fr["w2c"][k][3].get<double>();
    ASSERT_GT(pc[2], 0) << "view " << i;
    const double u_expected = fx * pc[0] / pc[2] + cx, v_expected = fy * pc[1] / pc[2] + cy;
    double u = 0, v = 0;
    ASSERT_TRUE(alpha_centroid(images[i], u, v)) << "view " << i << " is empty";
    // Within 0.2 px (measured: ~0.05 px at 4x4 supersampling), so that a half-pixel convention slip fails.
    EXPECT_NEAR(u, u_expected, 0.2) << "view " << i;
    EXPECT_NEAR(v, v_expected, 0.2) << "view " << i;
    // Off-centre for real, so that a flipped axis could not pass.
    EXPECT_GT(std::hypot(u_expected - cx, v_expected - cy), 10.0) << "view " << i;
    EXPECT_EQ(fr["file_path"].get<std::string>(), view_file_name(static_cast<int>(i), static_cast<int>(frames.size())));
  }
  fs::remove_all(dir);
}

// (2) The same seed gives byte-identical PNGs, whatever the thread or rasteriser instance; another seed differs.
TEST(RenderObjects, SameSeedSameBytes) {
  RenderSettings settings;
  settings.size = 64;
  settings.views = parse_view_spec("random:4");
  const auto sources = list_objects(3, 7, 42, {});
  ASSERT_EQ(sources[0].name, "proc_42_000007");
  auto render_pngs = [&](const ObjectSource& src) {
    Rasterizer r(2);
    std::vector<Camera> cams;
    std::vector<Image> images;
    render_object(build_mesh(src, GltfOptions{}), src.seed, settings, r, cams, images);
    std::vector<std::vector<uint8_t>> pngs;
    for (const Image& im : images) pngs.push_back(encode_png(im));
    pngs.push_back(std::vector<uint8_t>());
    const std::string json = cameras_json(cams, std::vector<std::string>(cams.size(), "x.png"));
    pngs.back().assign(json.begin(), json.end());
    return pngs;
  };
  const auto a = render_pngs(sources[0]);
  std::vector<std::vector<uint8_t>> b, c;
  std::thread t1([&] { b = render_pngs(sources[0]); });
  std::thread t2([&] { c = render_pngs(sources[1]); });
  t1.join(), t2.join();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // The object at index 7 is the same whether the run starts at 0 or at 7.
  const auto from_zero = list_objects(8, 0, 42, {});
  EXPECT_EQ(from_zero[7].seed, sources[0].seed);
  EXPECT_EQ(from_zero[7].name, sources[0].name);
}

// (3) fixed64: view 16 e + a at azimuth 22.5 a (counter-clockwise from +x), elevation 20 e, radius 2.7, looking at
// the origin with image up (-y) towards world +z; fx = fy = 0.5 W / tan(25 deg), cx = cy = W / 2.
TEST(RenderObjects, Fixed64Layout) {
  const int W = 256;
  const std::vector<Camera> cams = make_views(parse_view_spec("fixed64"), W, W, 99);
  ASSERT_EQ(cams.size(), 64u);
  const Mat4 c0 = cams[0].c2w();
  const double expect0[4][4] = {{0, 0, -1, 2.7}, {1, 0, 0, 0}, {0, -1, 0, 0}, {0, 0, 0, 1}};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(c0.m[r][c], expect0[r][c], 1e-12) << r << "," << c;
  for (int e = 0; e < 4; ++e)
    for (int a = 0; a < 16; ++a) {
      const Camera& cam = cams[static_cast<size_t>(16 * e + a)];
      EXPECT_NEAR(cam.fx, 0.5 * W / std::tan(25 * kPi / 180), 1e-9);
      EXPECT_EQ(cam.fx, cam.fy);
      EXPECT_EQ(cam.cx, W / 2.0);
      EXPECT_EQ(cam.cy, W / 2.0);
      const double az = 22.5 * a * kPi / 180, el = 20.0 * e * kPi / 180;
      const double pos[3] = {2.7 * std::cos(el) * std::cos(az), 2.7 * std::cos(el) * std::sin(az), 2.7 * std::sin(el)};
      const Mat4 c2w = cam.c2w();
      for (int k = 0; k < 3; ++k) {
        EXPECT_NEAR(c2w.m[k][3], pos[k], 1e-9);
        EXPECT_NEAR(c2w.m[k][2], -pos[k] / 2.7, 1e-9);  // forward looks at the origin
      }
      EXPECT_NEAR(c2w.m[2][0], 0.0, 1e-9);  // x (right) is horizontal
      EXPECT_GT(-c2w.m[2][1], 0.0);         // -y (image up) points up
      // Right-handed: x cross y = z.
      const Vec3 x{float(c2w.m[0][0]), float(c2w.m[1][0]), float(c2w.m[2][0])};
      const Vec3 y{float(c2w.m[0][1]), float(c2w.m[1][1]), float(c2w.m[2][1])};
      const Vec3 z{float(c2w.m[0][2]), float(c2w.m[1][2]), float(c2w.m[2][2])};
      const Vec3 xy = cross(x, y);
      EXPECT_NEAR(dot(xy, z), 1.0, 1e-5);
    }
  // Random views: on the 2.7 sphere, elevations within [-10, 70] deg, deterministic per seed.
  const auto r1 = make_views(parse_view_spec("random:32"), W, W, 5),
             r2 = make_views(parse_view_spec("random:32"), W, W, 5);
  for (size_t i = 0; i < r1.size(); ++i) {
    const Mat4 c = r1[i].c2w();
    const double d = std::sqrt(c.m[0][3] * c.m[0][3] + c.m[1][3] * c.m[1][3] + c.m[2][3] * c.m[2][3]);
    EXPECT_NEAR(d, 2.7, 1e-9);
    const double el = std::asin(c.m[2][3] / d) * 180 / kPi;
    EXPECT_GE(el, -10.0 - 1e-9);
    EXPECT_LE(el, 70.0 + 1e-9);
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(c.m[r][k], r2[i].c2w().m[r][k]);
  }
}

// fixed64 against the cameras of LaCT's own GSO sample (gso_toy), when it is available.
TEST(RenderObjects, Fixed64MatchesTheGsoSample) {
#ifdef RENDER_OBJECTS_GSO_CAMERAS
  const std::string path = RENDER_OBJECTS_GSO_CAMERAS;
#else
  const std::string path;
#endif
  if (path.empty() || !fs::exists(path)) GTEST_SKIP() << "no GSO sample cameras at '" << path << "'";
  std::ifstream f(path);
  const nlohmann::json frames = nlohmann::json::parse(f);
  ASSERT_EQ(frames.size(), 64u);
  const int W = frames[0]["w"];
  const std::vector<Camera> cams = make_views(parse_view_spec("fixed64"), W, W, 0);
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_NEAR(cams[i].fx, frames[i]["fx"].get<double>(), 1e-4);
    EXPECT_NEAR(cams[i].cx, frames[i]["cx"].get<double>(), 1e-9);
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) EXPECT_NEAR(cams[i].w2c.m[r][c], frames[i]["w2c"][r][c].get<double>(), 1e-6) << i;
  }
}

// (4) A box with one colour per face: each camera sees the face that looks at it.
TEST(RenderObjects, BoxFacesSeenFromTheirSide) {
  Mesh box = make_primitive(Primitive::Box);
  // make_primitive(Box) emits the faces +x, -x, +y, -y, +z, -z, two triangles each.
  const Rgba colours[6] = {{1, 0, 0, 1}, {0, 1, 0, 1}, {0, 0, 1, 1}, {1, 1, 0, 1}, {1, 0, 1, 1}, {0, 1, 1, 1}};
  box.materials.resize(6);
  for (int f = 0; f < 6; ++f) box.materials[static_cast<size_t>(f)].base_color = colours[f];
  for (size_t t = 0; t < box.triangles(); ++t) box.tri_material[t] = static_cast<uint32_t>(t / 2);
  validate(box);
  // Check the assumption about the face order from the geometry itself.
  for (size_t t = 0; t < box.triangles(); t += 2) {
    const Vec3 n = box.normals[box.indices[3 * t]];
    const Vec3 expected[6] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
    EXPECT_NEAR(dot(n, expected[t / 2]), 1.0f, 1e-6f);
  }
  Lighting flat;
  flat.ambient = 1, flat.diffuse = 0;  // colours come out exactly
  const std::vector<Camera> cams = make_views(parse_view_spec("fixed64"), 64, 64, 0);
  struct Case {
    int view, face;
  };
  // view 0: +x, 4: azimuth 90 = +y, 8: -x, 12: -y, 48: elevation 60 looks down on +z.
  const Case cases[] = {{0, 0}, {4, 2}, {8, 1}, {12, 3}, {48, 4}};
  Rasterizer r(2);
  for (const Case& c : cases) {
    Image img;
    r.render(box, cams[static_cast<size_t>(c.view)], flat, img);
    const uint8_t* px = &img.rgba[(32 * 64 + 32) * 4];
    EXPECT_EQ(px[3], 255) << "view " << c.view;
    EXPECT_EQ(px[0], colours[c.face].r > 0 ? 255 : 0) << "view " << c.view;
    EXPECT_EQ(px[1], colours[c.face].g > 0 ? 255 : 0) << "view " << c.view;
    EXPECT_EQ(px[2], colours[c.face].b > 0 ? 255 : 0) << "view " << c.view;
    // The background is transparent white.
    EXPECT_EQ(img.rgba[0], 255);
    EXPECT_EQ(img.rgba[3], 0);
  }
  // The textured box from +x reads upright and not mirrored: the texture's top-left quadrant appears top-left.
  std::vector<uint8_t> tex(4 * 4 * 4, 0);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) {
      uint8_t* p = &tex[(y * 4 + x) * 4];
      p[0] = (x < 2 && y < 2) ? 255 : 0;  // red in the top-left quadrant
      p[3] = 255;
    }
  Mesh tbox = make_primitive(Primitive::Box);
  tbox.materials[0].texture = std::make_shared<const Texture>(4, 4, tex);
  tbox.materials[0].wrap_s = tbox.materials[0].wrap_t = Wrap::Clamp;
  Image img;
  r.render(tbox, cams[0], flat, img);
  const int q = 64 / 2 - 8;                               // well inside each quadrant of the face
  EXPECT_GT(img.rgba[((32 - 8) * 64 + q) * 4], 200);      // top-left red
  EXPECT_LT(img.rgba[((32 - 8) * 64 + 64 - q) * 4], 50);  // top-right not
  EXPECT_LT(img.rgba[((32 + 8) * 64 + q) * 4], 50);       // bottom-left not
}

// The shard: header line, shapes, offsets, dropped objects compacted away, c2w = inverse(w2c).
TEST(RenderObjects, ShardLayout) {
  const std::string dir = temp_dir("shard");
  const std::string path = dir + "/s.bin";
  const std::vector<std::string> names = {"a", "b", "c"};
  const int V = 2, H = 8, W = 12;
  {
    ShardWriter shard(path, names, V, H, W, {{"note", "test"}});
    for (size_t slot = 0; slot < 3; ++slot) {
      std::vector<Image> images(V);
      std::vector<Camera> cams;
      for (int v = 0; v < V; ++v) {
        images[static_cast<size_t>(v)] = {
            W, H, std::vector<uint8_t>(static_cast<size_t>(H) * W * 4, static_cast<uint8_t>(10 * slot + v))};
        cams.push_back(orbit_camera(30.0 * v + slot, 10, 2.7, W, H, 50));
      }
      shard.write(slot, images, cams);
    }
    EXPECT_EQ(shard.finish({true, false, true}), 2u);
  }
  std::ifstream f(path, std::ios::binary);
  std::string line;
  std::getline(f, line);
  const nlohmann::json h = nlohmann::json::parse(line);
  EXPECT_EQ(h["format"], "lact-render-shard");
  EXPECT_EQ(h["names"], nlohmann::json({"a", "c"}));
  EXPECT_EQ(h["note"], "test");
  const uint64_t hb = h["header_bytes"], io = h["images"]["offset"], co = h["cameras"]["offset"];
  EXPECT_EQ(line.size() + 1, hb);
  EXPECT_EQ(hb % 4096, 0u);
  EXPECT_EQ(io, hb);
  EXPECT_EQ(co, io + 2ull * V * H * W * 4);
  EXPECT_EQ(fs::file_size(path), co + 2ull * V * 20 * 4);
  std::vector<uint8_t> bytes(fs::file_size(path));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  const size_t obj = static_cast<size_t>(V) * H * W * 4;
  EXPECT_EQ(bytes[io], 0);
  EXPECT_EQ(bytes[io + obj], 20);            // object "c", view 0
  EXPECT_EQ(bytes[io + obj + obj / 2], 21);  // object "c", view 1
  float cam[20];
  std::memcpy(cam, &bytes[co + 20 * 4 * 2], sizeof cam);  // object "c", view 0
  const Camera expected = orbit_camera(2, 10, 2.7, W, H, 50);
  EXPECT_FLOAT_EQ(cam[0], static_cast<float>(expected.fx));
  EXPECT_FLOAT_EQ(cam[2], 6.0f);
  EXPECT_FLOAT_EQ(cam[3], 4.0f);
  const Mat4 c2w = expected.c2w();
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(cam[4 + 4 * r + c], c2w.m[r][c], 1e-6);
  fs::remove_all(dir);
}

// Procedural objects fill the unit cube and have textures.
TEST(RenderObjects, ProceduralObjectsAreNormalised) {
  for (uint64_t s = 0; s < 20; ++s) {
    const Mesh m = make_procedural_object(s, "x");
    validate(m);
    const Bounds b = bounds(m);
    const float extent = std::max({b.hi.x - b.lo.x, b.hi.y - b.lo.y, b.hi.z - b.lo.z});
    EXPECT_NEAR(extent, 2.0f, 1e-4f);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(b.lo[k] + b.hi[k], 0.0f, 1e-4f);
      EXPECT_GE(b.lo[k], -1.0001f);
      EXPECT_LE(b.hi[k], 1.0001f);
    }
    EXPECT_GE(m.materials.size(), 2u);
    EXPECT_LE(m.materials.size(), 6u);
    for (const Material& mat : m.materials) EXPECT_TRUE(mat.texture);
  }
}

// A real glTF 2.0 file (Debian assimp-testmodels), when installed: textured, normalised, z-up.
TEST(RenderObjects, GltfBoxTextured) {
  const std::string files[] = {"/usr/share/assimp/models/glTF2/BoxTextured-glTF-Binary/BoxTextured.glb",
                               "/usr/share/assimp/models/glTF2/BoxTextured-glTF/BoxTextured.gltf",
                               "/usr/share/assimp/models/glTF2/BoxTextured-glTF-Embedded/BoxTextured.gltf"};
  if (!fs::exists(files[0])) GTEST_SKIP() << "assimp-testmodels is not installed";
  for (const std::string& file : files) {
    if (!fs::exists(file)) continue;
    ObjectSource src;
    src.kind = ObjectSource::Kind::Gltf;
    src.path = file;
    src.name = "box";
    std::vector<std::string> warnings;
    const Mesh m = build_mesh(src, GltfOptions{}, Fit::Cube, &warnings);
    EXPECT_EQ(m.triangles(), 12u) << file;
    ASSERT_EQ(m.materials.size(), 1u) << file;
    EXPECT_TRUE(m.materials[0].texture) << file;
    const Bounds b = bounds(m);
    EXPECT_NEAR(b.hi.z - b.lo.z, 2.0f, 1e-4f) << file;
    Rasterizer r(2);
    Image img;
    r.render(m, make_views(parse_view_spec("fixed64"), 64, 64, 0)[16 + 2], Lighting{}, img);
    EXPECT_EQ(img.rgba[(32 * 64 + 32) * 4 + 3], 255) << file;
  }
}
