// render_objects: renders procedural and glTF objects into the LaCT object layout (and/or a training shard).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "objects.h"
#include "photo_textures.h"
#include "shard.h"
#include "writer.h"

namespace {

const char* kUsage =
    R"(usage: render_objects --out DIR [--procedural N [--procedural-start K]] [--seed S] [--style S] [--photos P ...]
                      [--gltf FILE_OR_DIR ...] [--size 128] [--views fixed64|random:N] [--threads T]
                      [--shard FILE [--no-png]] [--ss K] [--radius 2.7] [--fov 50] [--max-texture 1024]
                      [--fit cube|sphere] [--gltf-up y|z] [--quiet]

Renders objects normalised into [-1,1]^3 from cameras on a sphere looking at the origin (the GSO/LaCT
convention: z-up world, OpenCV cameras, horizontal FoV 50 deg, radius 2.7) and writes
  DIR/<object>/NNN.png (RGBA, transparent background), DIR/<object>/opencv_cameras.json, DIR/index.json
and, with --shard, one memory-mappable training file (see tools/render_objects/README.md).

  --out DIR            output folder (not needed with --no-png)
  --procedural N       N procedural objects (random compositions of textured primitives)
  --procedural-start K first procedural index (default 0): objects K..K+N-1 of the seed's sequence
  --seed S             seed of the procedural objects, random views and lights (default 0)
  --style S            procedural generator: primitives (default: 2-6 textured primitives, named proc_*) or
                       assembly (toy-like: a deformed body with 6-24 small plastic parts, highlights, soft
                       light, named asm_*)
  --photos PATH ...    PNG/JPEG photographs (files or folders) whose random crops texture some assembly parts
  --gltf PATH ...      .gltf/.glb files, or folders searched recursively (y-up models, see --gltf-up)
  --size N             image width and height in pixels (default 128)
  --views SPEC         fixed64 (16 azimuths x elevations 0/20/40/60, view 16*e+a) or random:N (default random:32)
  --threads T          worker threads, one object each (default: all cores)
  --shard FILE         also write a training shard
  --no-png             write only the shard
  --ss K               K x K supersampling (default 2)
  --radius R           camera distance (default 2.7)
  --fov DEG            horizontal field of view (default 50)
  --fit cube|sphere    scale objects into [-1,1]^3 (cube, default: GSO; corners can leave the frame) or into
                       the unit sphere (never cut by the image border at the default radius and FoV)
  --max-texture N      shrink glTF textures to at most N texels a side (default 1024)
  --gltf-up y|z        the glTF files' up axis (default y, the glTF convention)
  --quiet              no progress lines
)";

struct Args {
  std::string out, shard;
  int procedural = 0, procedural_start = 0;
  uint64_t seed = 0;
  std::vector<std::string> gltf;
  int size = 128;
  std::string views = "random:32";
  int threads = 0, ss = 2, max_texture = 1024;
  double radius = 2.7, fov = 50;
  bool no_png = false, quiet = false, y_up = true;
  ro::Fit fit = ro::Fit::Cube;
  ro::ProceduralStyle style = ro::ProceduralStyle::Primitives;
  std::vector<std::string> photos;
};

long long to_integer(const std::string& flag, const std::string& v, long long lo, long long hi) {
  size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || x < lo || x > hi)
    throw std::invalid_argument(flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got '" + v + "'");
  return x;
}

double to_double(const std::string& flag, const std::string& v, double lo, double hi) {
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || !(x >= lo && x <= hi))
    throw std::invalid_argument(flag + ": expected a number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got '" + v + "'");
  return x;
}

Args parse(int argc, char** argv) {
  Args a;
  std::vector<std::string> v(argv + 1, argv + argc);
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string& f = v[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= v.size()) throw std::invalid_argument(f + ": missing value");
      return v[++i];
    };
    // Every following argument up to the next option (at least one).
    auto paths = [&](std::vector<std::string>& out) {
      const size_t before = out.size();
      while (i + 1 < v.size() && v[i + 1].rfind("--", 0) != 0) out.push_back(v[++i]);
      if (out.size() == before) throw std::invalid_argument(f + ": missing file or folder");
    };
    if (f == "--help" || f == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (f == "--out")
      a.out = value();
    else if (f == "--shard")
      a.shard = value();
    else if (f == "--procedural")
      a.procedural = static_cast<int>(to_integer(f, value(), 0, 100000000));
    else if (f == "--procedural-start")
      a.procedural_start = static_cast<int>(to_integer(f, value(), 0, 1000000000));
    else if (f == "--seed")
      a.seed = static_cast<uint64_t>(to_integer(f, value(), 0, 9007199254740991LL));
    else if (f == "--photos")
      paths(a.photos);
    else if (f == "--gltf")
      paths(a.gltf);
    else if (f == "--size")
      a.size = static_cast<int>(to_integer(f, value(), 8, 4096));
    else if (f == "--views")
      a.views = value();
    else if (f == "--threads")
      a.threads = static_cast<int>(to_integer(f, value(), 1, 1024));
    else if (f == "--ss")
      a.ss = static_cast<int>(to_integer(f, value(), 1, 8));
    else if (f == "--max-texture")
      a.max_texture = static_cast<int>(to_integer(f, value(), 1, 16384));
    else if (f == "--radius")
      a.radius = to_double(f, value(), 1e-3, 1e6);
    else if (f == "--fov")
      a.fov = to_double(f, value(), 1, 170);
    else if (f == "--no-png")
      a.no_png = true;
    else if (f == "--quiet")
      a.quiet = true;
    else if (f == "--gltf-up") {
      const std::string& up = value();
      if (up != "y" && up != "z") throw std::invalid_argument("--gltf-up: expected y or z");
      a.y_up = up == "y";
    } else if (f == "--style") {
      const std::string& style = value();
      if (style != "primitives" && style != "assembly")
        throw std::invalid_argument("--style: expected primitives or assembly");
      a.style = style == "primitives" ? ro::ProceduralStyle::Primitives : ro::ProceduralStyle::Assembly;
    } else if (f == "--fit") {
      const std::string& fit = value();
      if (fit != "cube" && fit != "sphere") throw std::invalid_argument("--fit: expected cube or sphere");
      a.fit = fit == "cube" ? ro::Fit::Cube : ro::Fit::Sphere;
    } else
      throw std::invalid_argument("unknown argument '" + f + "' (see --help)");
  }
  if (!a.photos.empty() && a.style != ro::ProceduralStyle::Assembly)
    throw std::invalid_argument("--photos: only the assembly style uses photographs (add --style assembly)");
  if (a.no_png && a.shard.empty()) throw std::invalid_argument("--no-png needs --shard");
  if (!a.no_png && a.out.empty()) throw std::invalid_argument("--out is required (see --help)");
  if (a.procedural == 0 && a.gltf.empty())
    throw std::invalid_argument("nothing to render: give --procedural N and/or --gltf");
  return a;
}

// The training shard (null without --shard); its header records how the objects were made.
std::unique_ptr<ro::ShardWriter> open_shard(const Args& args, const std::vector<std::string>& names, int views) {
  namespace fs = std::filesystem;
  if (args.shard.empty()) return nullptr;
  if (fs::path(args.shard).has_parent_path()) fs::create_directories(fs::path(args.shard).parent_path());
  std::string photos;
  for (const std::string& p : args.photos) photos += (photos.empty() ? "" : " ") + fs::path(p).filename().string();
  return std::make_unique<ro::ShardWriter>(
      args.shard, names, views, args.size, args.size,
      std::vector<std::pair<std::string, std::string>>{
          {"views_spec", args.views},
          {"seed", std::to_string(args.seed)},
          {"fit", args.fit == ro::Fit::Cube ? "cube" : "sphere"},
          {"style", args.style == ro::ProceduralStyle::Assembly ? "assembly" : "primitives"},
          {"photos", photos}});
}

ro::RenderSettings render_settings(const Args& args) {
  ro::RenderSettings settings;
  settings.size = args.size;
  settings.views = ro::parse_view_spec(args.views);
  settings.views.radius = args.radius;
  settings.views.fov_x_deg = args.fov;
  return settings;
}

ro::GltfOptions gltf_options(const Args& args) {
  ro::GltfOptions gltf;
  gltf.y_up = args.y_up;
  gltf.max_texture = args.max_texture;
  return gltf;
}

int run(const Args& args) {
  namespace fs = std::filesystem;
  using Clock = std::chrono::steady_clock;
  const ro::RenderSettings settings = render_settings(args);
  const ro::GltfOptions gltf = gltf_options(args);

  const ro::PhotoLibrary photos = ro::PhotoLibrary::load(args.photos);
  const std::vector<ro::ObjectSource> objects =
      ro::list_objects(args.procedural, args.procedural_start, args.seed, args.gltf, args.style);
  std::vector<std::string> names;
  for (const auto& o : objects) names.push_back(o.name);
  const int views = settings.views.kind == ro::ViewSpec::Kind::Fixed64 ? 64 : settings.views.count;

  std::unique_ptr<ro::ShardWriter> shard = open_shard(args, names, views);
  if (!args.no_png) fs::create_directories(args.out);

  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int threads =
      std::max(1, std::min(args.threads > 0 ? args.threads : static_cast<int>(hw), static_cast<int>(objects.size())));
  std::atomic<size_t> next{0}, done{0};
  std::vector<bool> ok(objects.size(), false);
  std::vector<char> ok_flags(objects.size(), 0);
  std::mutex log;
  const auto start = Clock::now();
  auto last_report = start;

  auto worker = [&]() {
    ro::Rasterizer rasterizer(args.ss);
    std::vector<ro::Camera> cameras;
    std::vector<ro::Image> images;
    for (size_t i = next++; i < objects.size(); i = next++) {
      const ro::ObjectSource& src = objects[i];
      std::vector<std::string> warnings;
      try {
        const ro::Mesh mesh = ro::build_mesh(src, gltf, args.fit, &warnings, &photos);
        ro::render_object(mesh, src.seed, settings, rasterizer, cameras, images, ro::lighting_style(src));
        if (!args.no_png) ro::write_object_folder((fs::path(args.out) / src.name).string(), cameras, images);
        if (shard) shard->write(i, images, cameras);
        ok_flags[i] = 1;
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(log);
        std::fprintf(stderr, "render_objects: %s (%s): skipped: %s\n", src.name.c_str(),
                     src.path.empty() ? "procedural" : src.path.c_str(), e.what());
      }
      const size_t finished = ++done;
      std::lock_guard<std::mutex> lock(log);
      if (!args.quiet)
        for (const std::string& w : warnings)
          std::fprintf(stderr, "render_objects: %s: warning: %s\n", src.name.c_str(), w.c_str());
      const auto now = Clock::now();
      if (!args.quiet && (now - last_report > std::chrono::seconds(5) || finished == objects.size())) {
        last_report = now;
        const double s = std::chrono::duration<double>(now - start).count();
        std::fprintf(stderr, "render_objects: %zu/%zu objects, %.1f s, %.1f objects/min\n", finished, objects.size(), s,
                     60.0 * static_cast<double>(finished) / std::max(s, 1e-9));
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();

  std::vector<std::string> rendered;
  for (size_t i = 0; i < objects.size(); ++i) {
    ok[i] = ok_flags[i] != 0;
    if (ok[i]) rendered.push_back(objects[i].name);
  }
  if (!args.no_png) ro::write_index(args.out, rendered);
  if (shard) shard->finish(ok);
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  std::fprintf(stderr,
               "render_objects: %zu objects rendered (%zu failed), %d views each at %dx%d, %d threads, %.2f s "
               "(%.1f objects/min, %.1f views/s)\n",
               rendered.size(), objects.size() - rendered.size(), views, args.size, args.size, threads, s,
               60.0 * static_cast<double>(rendered.size()) / std::max(s, 1e-9),
               static_cast<double>(rendered.size() * static_cast<size_t>(views)) / std::max(s, 1e-9));
  return rendered.size() == objects.size() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "render_objects: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "render_objects: %s\n", e.what());
    return 1;
  }
}
