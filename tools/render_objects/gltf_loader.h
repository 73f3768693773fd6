// glTF 2.0 (.gltf / .glb) to a world-space Mesh, via tinygltf.
#pragma once

#include <string>
#include <vector>

#include "mesh.h"

namespace ro {

struct GltfOptions {
  bool y_up = true;        // glTF is y-up: rotate +90 deg about x so that the model's up becomes world +z
  int max_texture = 1024;  // textures are halved until both sides are at most this
};

// Loads the default scene (or every root node, or every mesh when there are no nodes), applying node transforms.
// Supports indexed and non-indexed triangles, strips and fans; POSITION, NORMAL (flat normals when missing),
// TEXCOORD_n; baseColorFactor and baseColorTexture (or KHR_materials_pbrSpecularGlossiness diffuse); embedded,
// data-URI and external images. Skips primitives it cannot use (with a warning in `warnings`).
// Throws std::runtime_error when the file cannot be parsed or holds no usable triangles.
Mesh load_gltf(const std::string& path, const GltfOptions& options, std::vector<std::string>* warnings = nullptr);

}  // namespace ro
