#include "objects.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "procedural.h"
#include "rng.h"

namespace ro {

namespace fs = std::filesystem;

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

bool is_gltf(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".gltf" || ext == ".glb";
}

// Folder-safe name: the path without its extension, separators and odd characters turned into '_'.
std::string safe_name(const fs::path& relative) {
  fs::path p = relative;
  p.replace_extension();
  std::string out;
  for (unsigned char c : p.generic_string())
    out.push_back(std::isalnum(c) || c == '-' || c == '.' ? static_cast<char>(c) : '_');
  while (!out.empty() && out.front() == '.') out.erase(out.begin());
  return out.empty() ? "object" : out;
}

}  // namespace

std::vector<ObjectSource> list_objects(int procedural_count, int procedural_first, uint64_t seed,
                                       const std::vector<std::string>& gltf_paths, ProceduralStyle style) {
  std::vector<ObjectSource> out;
  const bool assembly = style == ProceduralStyle::Assembly;
  // Assemblies draw from their own sequence, so that asm_S_i shares no views or light with proc_S_i.
  const uint64_t sequence = assembly ? mix_seed(seed, 0x617373656D626C79ull) : seed;
  for (int i = 0; i < procedural_count; ++i) {
    const int index = procedural_first + i;
    ObjectSource s;
    s.kind = ObjectSource::Kind::Procedural;
    s.style = style;
    char name[64];
    std::snprintf(name, sizeof name, "%s_%llu_%06d", assembly ? "asm" : "proc", static_cast<unsigned long long>(seed),
                  index);
    s.name = name;
    s.seed = mix_seed(sequence, static_cast<uint64_t>(index));
    out.push_back(s);
  }
  std::set<std::string> used;
  for (const ObjectSource& s : out) used.insert(s.name);
  for (const std::string& arg : gltf_paths) {
    const fs::path root(arg);
    std::vector<std::pair<fs::path, std::string>> files;  // file, name
    if (fs::is_directory(root)) {
      for (const auto& entry : fs::recursive_directory_iterator(root, fs::directory_options::follow_directory_symlink))
        if (entry.is_regular_file() && is_gltf(entry.path()))
          files.emplace_back(entry.path(), safe_name(fs::relative(entry.path(), root)));
      if (files.empty()) throw std::runtime_error(arg + ": no .gltf or .glb files in this folder");
      std::sort(files.begin(), files.end());
    } else if (fs::is_regular_file(root)) {
      // Named with its folder too ("valve-index/left.glb" -> "valve-index_left"), as under a folder argument.
      const fs::path parent = fs::absolute(root).parent_path().filename();
      files.emplace_back(root, safe_name(parent.empty() ? root.filename() : parent / root.filename()));
    } else {
      throw std::runtime_error(arg + ": no such file or folder");
    }
    for (auto& [file, name] : files) {
      std::string unique = name;
      for (int k = 2; used.count(unique); ++k) unique = name + "_" + std::to_string(k);
      used.insert(unique);
      ObjectSource s;
      s.kind = ObjectSource::Kind::Gltf;
      s.name = unique;
      s.path = file.string();
      s.seed = mix_seed(seed, fnv1a(unique));
      out.push_back(s);
    }
  }
  return out;
}

Mesh build_mesh(const ObjectSource& source, const GltfOptions& gltf, Fit fit, std::vector<std::string>* warnings,
                const PhotoLibrary* photos) {
  Mesh mesh;
  if (source.kind == ObjectSource::Kind::Procedural) {
    // Both already in [-1,1]^3.
    mesh = source.style == ProceduralStyle::Assembly
               ? make_assembly_object(mix_seed(source.seed, 0), source.name, photos)
               : make_procedural_object(mix_seed(source.seed, 0), source.name);
  } else {
    mesh = load_gltf(source.path, gltf, warnings);
    mesh.name = source.name;
    normalize_to_unit_cube(mesh);
  }
  if (fit == Fit::Sphere) normalize_to_unit_sphere(mesh);
  validate(mesh);
  return mesh;
}

LightingStyle lighting_style(const ObjectSource& source) {
  const bool assembly = source.kind == ObjectSource::Kind::Procedural && source.style == ProceduralStyle::Assembly;
  return assembly ? LightingStyle::Soft : LightingStyle::Directional;
}

void render_object(const Mesh& mesh, uint64_t object_seed, const RenderSettings& settings, Rasterizer& rasterizer,
                   std::vector<Camera>& cameras, std::vector<Image>& images, LightingStyle lighting) {
  cameras = make_views(settings.views, settings.size, settings.size, mix_seed(object_seed, 1));
  const Lighting light = random_lighting(mix_seed(object_seed, 2), lighting);
  images.resize(cameras.size());
  for (size_t v = 0; v < cameras.size(); ++v) rasterizer.render(mesh, cameras[v], light, images[v]);
}

}  // namespace ro
