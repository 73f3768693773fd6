// What to render: the list of objects (procedural seeds and glTF files), their names and seeds, and rendering one
// object's views.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cameras.h"
#include "gltf_loader.h"
#include "mesh.h"
#include "photo_textures.h"
#include "procedural.h"
#include "rasterizer.h"

namespace ro {

struct ObjectSource {
  enum class Kind { Procedural, Gltf } kind = Kind::Procedural;
  std::string name;                                     // folder name: unique, [A-Za-z0-9_.-]
  std::string path;                                     // glTF file
  uint64_t seed = 0;                                    // drives the procedural shape, the random views and the light
  ProceduralStyle style = ProceduralStyle::Primitives;  // procedural objects only
};

// Procedural objects first (indices first .. first + count - 1, named proc_<seed>_<index>, or asm_<seed>_<index>
// for the Assembly style, whose seeds are a different sequence), then every glTF file
// given (named <its folder>_<stem>) or found recursively under a given folder (sorted, named after its path below
// that folder, '/' -> '_'); clashing names get _2, _3, ...
// Throws std::runtime_error for a path that does not exist or a folder without glTF files.
std::vector<ObjectSource> list_objects(int procedural_count, int procedural_first, uint64_t seed,
                                       const std::vector<std::string>& gltf_paths,
                                       ProceduralStyle style = ProceduralStyle::Primitives);

// How objects are scaled: Cube = bounding box centred, largest side 2 (into [-1,1]^3, the GSO convention);
// Sphere = bounding box centred, farthest vertex at distance 1 (never cut off by the image border).
enum class Fit { Cube, Sphere };

// The object's mesh in world space, normalised by `fit`. `photos` (may be null) texture assembly objects.
Mesh build_mesh(const ObjectSource& source, const GltfOptions& gltf, Fit fit = Fit::Cube,
                std::vector<std::string>* warnings = nullptr, const PhotoLibrary* photos = nullptr);

struct RenderSettings {
  int size = 128;  // square images
  ViewSpec views;
};

// The views of one object (from its seed) and their images, lit by random_lighting(seed, lighting).
void render_object(const Mesh& mesh, uint64_t object_seed, const RenderSettings& settings, Rasterizer& rasterizer,
                   std::vector<Camera>& cameras, std::vector<Image>& images,
                   LightingStyle lighting = LightingStyle::Directional);

// Assembly objects are lit softly (scanned-object renders); the rest as before.
LightingStyle lighting_style(const ObjectSource& source);

}  // namespace ro
