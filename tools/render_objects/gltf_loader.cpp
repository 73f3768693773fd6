#include "gltf_loader.h"

#include <stb_image.h>  // from libstb (Debian's shared build); tinygltf itself comes from libtinygltf
#include <tiny_gltf.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>

namespace ro {

namespace {

// Decodes images to 8-bit RGBA. An image that cannot be decoded is left empty (with a warning) instead of failing
// the whole file: its materials are then rendered untextured.
bool decode_image(tinygltf::Image* image, const int index, std::string* err, std::string* warn, int, int,
                  const unsigned char* bytes, int size, void*) {
  (void)err;
  int w = 0, h = 0, comp = 0;
  unsigned char* data = bytes && size > 0 ? stbi_load_from_memory(bytes, size, &w, &h, &comp, 4) : nullptr;
  if (!data || w < 1 || h < 1) {
    if (data) stbi_image_free(data);
    if (warn) *warn += "image " + std::to_string(index) + " cannot be decoded; rendering it untextured\n";
    return true;
  }
  image->width = w, image->height = h, image->component = 4, image->bits = 8;
  image->pixel_type = TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE;
  image->image.assign(data, data + static_cast<size_t>(w) * h * 4);
  stbi_image_free(data);
  return true;
}

// A bounds-checked view of an accessor's elements.
struct AccessorView {
  const unsigned char* data = nullptr;
  size_t count = 0, stride = 0;
  int components = 0, component_type = 0;
  bool normalized = false;

  double get(size_t i, int c) const {
    const unsigned char* p = data + i * stride;
    switch (component_type) {
      case TINYGLTF_COMPONENT_TYPE_FLOAT: {
        float v;
        std::memcpy(&v, p + 4 * c, 4);
        return v;
      }
      case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE: {
        const double v = p[c];
        return normalized ? v / 255.0 : v;
      }
      case TINYGLTF_COMPONENT_TYPE_BYTE: {
        const double v = static_cast<signed char>(p[c]);
        return normalized ? std::max(v / 127.0, -1.0) : v;
      }
      case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: {
        uint16_t v;
        std::memcpy(&v, p + 2 * c, 2);
        return normalized ? v / 65535.0 : v;
      }
      case TINYGLTF_COMPONENT_TYPE_SHORT: {
        int16_t v;
        std::memcpy(&v, p + 2 * c, 2);
        return normalized ? std::max(v / 32767.0, -1.0) : v;
      }
      case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT: {
        uint32_t v;
        std::memcpy(&v, p + 4 * c, 4);
        return v;
      }
      default:
        return 0;
    }
  }
  uint32_t index(size_t i) const { return static_cast<uint32_t>(get(i, 0)); }
};

// Returns false (and a reason) if the accessor is missing, has another type, or reaches outside its buffer.
bool view_accessor(const tinygltf::Model& model, int index, int type, AccessorView& out, std::string& why) {
  if (index < 0 || index >= static_cast<int>(model.accessors.size())) return why = "no such accessor", false;
  const tinygltf::Accessor& acc = model.accessors[static_cast<size_t>(index)];
  if (acc.type != type) return why = "unexpected accessor type", false;
  if (acc.sparse.isSparse) return why = "sparse accessors are not supported", false;
  if (acc.bufferView < 0 || acc.bufferView >= static_cast<int>(model.bufferViews.size()))
    return why = "accessor without a buffer view", false;
  const tinygltf::BufferView& bv = model.bufferViews[static_cast<size_t>(acc.bufferView)];
  if (bv.buffer < 0 || bv.buffer >= static_cast<int>(model.buffers.size())) return why = "bad buffer index", false;
  const std::vector<unsigned char>& buf = model.buffers[static_cast<size_t>(bv.buffer)].data;
  const int comp_size = tinygltf::GetComponentSizeInBytes(static_cast<uint32_t>(acc.componentType));
  const int comps = tinygltf::GetNumComponentsInType(static_cast<uint32_t>(acc.type));
  const int stride = acc.ByteStride(bv);
  if (comp_size <= 0 || comps <= 0 || stride <= 0) return why = "bad component type or stride", false;
  const size_t elem = static_cast<size_t>(comp_size) * comps;
  if (bv.byteOffset > buf.size() || bv.byteLength > buf.size() - bv.byteOffset)
    return why = "buffer view out of range", false;
  if (acc.count > 0) {
    const size_t need = acc.byteOffset + (acc.count - 1) * static_cast<size_t>(stride) + elem;
    if (acc.byteOffset > bv.byteLength || need > bv.byteLength || (acc.count - 1) > (SIZE_MAX / 2) / stride)
      return why = "accessor reaches outside its buffer view", false;
  }
  out.data = buf.data() + bv.byteOffset + acc.byteOffset;
  out.count = acc.count;
  out.stride = static_cast<size_t>(stride);
  out.components = comps;
  out.component_type = acc.componentType;
  out.normalized = acc.normalized;
  return true;
}

Wrap to_wrap(int mode) {
  switch (mode) {
    case TINYGLTF_TEXTURE_WRAP_CLAMP_TO_EDGE:
      return Wrap::Clamp;
    case TINYGLTF_TEXTURE_WRAP_MIRRORED_REPEAT:
      return Wrap::Mirror;
    default:
      return Wrap::Repeat;
  }
}

Mat4 node_matrix(const tinygltf::Node& node) {
  Mat4 m;
  if (node.matrix.size() == 16) {
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) m.m[r][c] = node.matrix[static_cast<size_t>(c * 4 + r)];  // column-major
    return m;
  }
  if (node.translation.size() == 3)
    m = m * Mat4::translation(node.translation[0], node.translation[1], node.translation[2]);
  if (node.rotation.size() == 4) {
    double q[4] = {node.rotation[0], node.rotation[1], node.rotation[2], node.rotation[3]};
    const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (n > 1e-12) {
      for (double& v : q) v /= n;
      m = m * Mat4::rotation(q[0], q[1], q[2], q[3]);
    }
  }
  if (node.scale.size() == 3) m = m * Mat4::scale(node.scale[0], node.scale[1], node.scale[2]);
  return m;
}

// The triangle corners of a primitive's vertex list: whole triangles of a list, or a strip's or fan's
// triangles (a strip alternates its winding so every triangle faces the same way).
std::vector<uint32_t> triangle_corners(const std::vector<uint32_t>& list, int mode) {
  std::vector<uint32_t> corners;
  if (mode == TINYGLTF_MODE_TRIANGLES) {
    corners.assign(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(list.size() / 3 * 3));
    return corners;
  }
  for (size_t i = 0; i + 2 < list.size(); ++i) {
    if (mode == TINYGLTF_MODE_TRIANGLE_STRIP)
      corners.insert(corners.end(), {list[i], list[i + 1 + (i & 1)], list[i + 2 - (i & 1)]});
    else
      corners.insert(corners.end(), {list[0], list[i + 1], list[i + 2]});
  }
  return corners;
}

class Loader {
 public:
  Loader(const tinygltf::Model& model, const GltfOptions& options, std::vector<std::string>* warnings)
      : model_(model), options_(options), warnings_(warnings) {}

  Mesh load(const Mat4& root) {
    const tinygltf::Model& m = model_;
    if (!m.scenes.empty()) {
      const int s = m.defaultScene >= 0 && m.defaultScene < static_cast<int>(m.scenes.size()) ? m.defaultScene : 0;
      for (int n : m.scenes[static_cast<size_t>(s)].nodes) visit(n, root, 0);
    } else if (!m.nodes.empty()) {
      std::vector<bool> is_child(m.nodes.size(), false);
      for (const tinygltf::Node& n : m.nodes)
        for (int c : n.children)
          if (c >= 0 && c < static_cast<int>(m.nodes.size())) is_child[static_cast<size_t>(c)] = true;
      for (size_t n = 0; n < m.nodes.size(); ++n)
        if (!is_child[n]) visit(static_cast<int>(n), root, 0);
    } else {
      for (size_t i = 0; i < m.meshes.size(); ++i) add_mesh(static_cast<int>(i), root);
    }
    return std::move(out_);
  }

 private:
  void warn(const std::string& w) {
    if (warnings_) warnings_->push_back(w);
  }

  void visit(int node, const Mat4& parent, int depth) {
    if (node < 0 || node >= static_cast<int>(model_.nodes.size())) return warn("node index out of range");
    if (depth > 64) return warn("node hierarchy deeper than 64 (a cycle?); stopping there");
    const tinygltf::Node& n = model_.nodes[static_cast<size_t>(node)];
    const Mat4 world = parent * node_matrix(n);
    if (n.mesh >= 0) add_mesh(n.mesh, world);
    for (int c : n.children) visit(c, world, depth + 1);
  }

  void add_mesh(int mesh, const Mat4& world) {
    if (mesh >= static_cast<int>(model_.meshes.size())) return warn("mesh index out of range");
    const tinygltf::Mesh& m = model_.meshes[static_cast<size_t>(mesh)];
    for (size_t p = 0; p < m.primitives.size(); ++p) {
      std::string why;
      if (!add_primitive(m.primitives[p], world, why))
        warn("mesh '" + m.name + "' primitive " + std::to_string(p) + ": " + why);
    }
  }

  // The index of the material in out_, converting glTF material `index` on first use (-1 = default material).
  uint32_t material(int index, int& texcoord) {
    texcoord = 0;
    auto it = materials_.find(index);
    if (it != materials_.end()) {
      texcoord = texcoords_[index];
      return it->second;
    }
    Material mat;
    if (index >= 0 && index < static_cast<int>(model_.materials.size())) {
      const tinygltf::Material& gm = model_.materials[static_cast<size_t>(index)];
      const auto& pbr = gm.pbrMetallicRoughness;
      std::vector<double> factor = pbr.baseColorFactor;
      int tex = pbr.baseColorTexture.index;
      texcoord = pbr.baseColorTexture.texCoord;
      auto sg = gm.extensions.find("KHR_materials_pbrSpecularGlossiness");
      if (tex < 0 && sg != gm.extensions.end() && sg->second.IsObject()) {
        const tinygltf::Value& v = sg->second;
        if (v.Has("diffuseFactor") && v.Get("diffuseFactor").IsArray() && v.Get("diffuseFactor").ArrayLen() == 4) {
          factor.assign(4, 1.0);
          for (int i = 0; i < 4; ++i)
            factor[static_cast<size_t>(i)] = v.Get("diffuseFactor").Get(i).GetNumberAsDouble();
        }
        if (v.Has("diffuseTexture") && v.Get("diffuseTexture").Has("index")) {
          tex = v.Get("diffuseTexture").Get("index").GetNumberAsInt();
          if (v.Get("diffuseTexture").Has("texCoord"))
            texcoord = v.Get("diffuseTexture").Get("texCoord").GetNumberAsInt();
        }
      }
      if (factor.size() == 4)
        mat.base_color = {static_cast<float>(factor[0]), static_cast<float>(factor[1]), static_cast<float>(factor[2]),
                          static_cast<float>(factor[3])};
      if (tex >= 0 && tex < static_cast<int>(model_.textures.size())) {
        const tinygltf::Texture& t = model_.textures[static_cast<size_t>(tex)];
        mat.texture = texture(t.source);
        if (t.sampler >= 0 && t.sampler < static_cast<int>(model_.samplers.size())) {
          mat.wrap_s = to_wrap(model_.samplers[static_cast<size_t>(t.sampler)].wrapS);
          mat.wrap_t = to_wrap(model_.samplers[static_cast<size_t>(t.sampler)].wrapT);
        }
      }
    }
    const auto id = static_cast<uint32_t>(out_.materials.size());
    out_.materials.push_back(mat);
    materials_[index] = id;
    texcoords_[index] = texcoord;
    return id;
  }

  std::shared_ptr<const Texture> texture(int image) {
    if (image < 0 || image >= static_cast<int>(model_.images.size())) return nullptr;
    auto it = textures_.find(image);
    if (it != textures_.end()) return it->second;
    const tinygltf::Image& img = model_.images[static_cast<size_t>(image)];
    std::shared_ptr<const Texture> tex;
    if (img.width > 0 && img.height > 0 && img.component == 4 && img.bits == 8 &&
        img.image.size() == static_cast<size_t>(img.width) * img.height * 4) {
      tex = std::make_shared<const Texture>(img.width, img.height, img.image, options_.max_texture);
    } else {
      warn("image " + std::to_string(image) + " ('" + img.uri + "') is not loaded; rendering it untextured");
    }
    textures_[image] = tex;
    return tex;
  }

  bool add_primitive(const tinygltf::Primitive& prim, const Mat4& world, std::string& why) {
    const int mode = prim.mode < 0 ? TINYGLTF_MODE_TRIANGLES : prim.mode;
    if (mode != TINYGLTF_MODE_TRIANGLES && mode != TINYGLTF_MODE_TRIANGLE_STRIP && mode != TINYGLTF_MODE_TRIANGLE_FAN)
      return why = "not triangles (mode " + std::to_string(mode) + ")", false;
    auto attr = [&](const char* name) {
      auto it = prim.attributes.find(name);
      return it == prim.attributes.end() ? -1 : it->second;
    };
    AccessorView pos, nrm, uv, idx;
    if (!view_accessor(model_, attr("POSITION"), TINYGLTF_TYPE_VEC3, pos, why)) return why = "POSITION: " + why, false;
    if (pos.component_type != TINYGLTF_COMPONENT_TYPE_FLOAT) return why = "POSITION is not float", false;
    std::string ignored;
    const bool has_nrm = view_accessor(model_, attr("NORMAL"), TINYGLTF_TYPE_VEC3, nrm, ignored) &&
                         nrm.component_type == TINYGLTF_COMPONENT_TYPE_FLOAT && nrm.count == pos.count;
    int texcoord = 0;
    const uint32_t mat = material(prim.material, texcoord);
    const std::string uv_name = "TEXCOORD_" + std::to_string(texcoord);
    const bool has_uv = out_.materials[mat].texture &&
                        view_accessor(model_, attr(uv_name.c_str()), TINYGLTF_TYPE_VEC2, uv, ignored) &&
                        uv.count == pos.count;
    // The primitive's vertex list, as triangle corners.
    std::vector<uint32_t> list;
    if (prim.indices >= 0) {
      if (!view_accessor(model_, prim.indices, TINYGLTF_TYPE_SCALAR, idx, why)) return why = "indices: " + why, false;
      if (idx.component_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE &&
          idx.component_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT &&
          idx.component_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT)
        return why = "indices are not unsigned integers", false;
      list.resize(idx.count);
      for (size_t i = 0; i < idx.count; ++i) list[i] = idx.index(i);
    } else {
      list.resize(pos.count);
      for (size_t i = 0; i < pos.count; ++i) list[i] = static_cast<uint32_t>(i);
    }
    for (uint32_t i : list)
      if (i >= pos.count) return why = "vertex index out of range", false;
    const std::vector<uint32_t> corners = triangle_corners(list, mode);
    // Vertices, transformed to world space.
    std::vector<Vec3> p(pos.count), n(pos.count);
    std::vector<Vec2> t(pos.count);
    for (size_t i = 0; i < pos.count; ++i) {
      p[i] = world.point(Vec3{static_cast<float>(pos.get(i, 0)), static_cast<float>(pos.get(i, 1)),
                              static_cast<float>(pos.get(i, 2))});
      if (has_nrm)
        n[i] = world.normal(Vec3{static_cast<float>(nrm.get(i, 0)), static_cast<float>(nrm.get(i, 1)),
                                 static_cast<float>(nrm.get(i, 2))});
      if (has_uv) t[i] = {static_cast<float>(uv.get(i, 0)), static_cast<float>(uv.get(i, 1))};
    }
    const size_t dropped = append_triangles(p, n, t, corners, mat, has_nrm);
    if (dropped) warn(std::to_string(dropped) + " triangles with non-finite positions dropped");
    if (corners.size() / 3 == dropped) return why = "no triangles", false;
    return true;
  }

  // Appends the triangles whose corners are finite; returns how many were dropped.
  size_t append_triangles(const std::vector<Vec3>& p, const std::vector<Vec3>& n, const std::vector<Vec2>& t,
                          const std::vector<uint32_t>& corners, uint32_t mat, bool has_nrm) {
    auto finite = [](const Vec3& v) { return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z); };
    size_t dropped = 0;
    if (has_nrm) {
      // Shared vertices: copy them all once, then the triangles whose corners are finite.
      const auto base = static_cast<uint32_t>(out_.positions.size());
      out_.positions.insert(out_.positions.end(), p.begin(), p.end());
      out_.normals.insert(out_.normals.end(), n.begin(), n.end());
      out_.uvs.insert(out_.uvs.end(), t.begin(), t.end());
      for (size_t c = 0; c + 2 < corners.size(); c += 3) {
        if (!finite(p[corners[c]]) || !finite(p[corners[c + 1]]) || !finite(p[corners[c + 2]])) {
          ++dropped;
          continue;
        }
        for (int k = 0; k < 3; ++k) out_.indices.push_back(base + corners[c + static_cast<size_t>(k)]);
        out_.tri_material.push_back(mat);
      }
    } else {
      // No normals: flat shading, three vertices per triangle with the face normal.
      for (size_t c = 0; c + 2 < corners.size(); c += 3) {
        const Vec3 &a = p[corners[c]], &b = p[corners[c + 1]], &d = p[corners[c + 2]];
        if (!finite(a) || !finite(b) || !finite(d)) {
          ++dropped;
          continue;
        }
        const Vec3 fn = normalize(cross(b - a, d - a));
        for (int k = 0; k < 3; ++k) {
          const uint32_t v = corners[c + static_cast<size_t>(k)];
          out_.indices.push_back(static_cast<uint32_t>(out_.positions.size()));
          out_.positions.push_back(p[v]);
          out_.normals.push_back(fn);
          out_.uvs.push_back(t[v]);
        }
        out_.tri_material.push_back(mat);
      }
    }
    return dropped;
  }

  const tinygltf::Model& model_;
  const GltfOptions& options_;
  std::vector<std::string>* warnings_;
  Mesh out_;
  std::map<int, uint32_t> materials_;
  std::map<int, int> texcoords_;
  std::map<int, std::shared_ptr<const Texture>> textures_;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

}  // namespace

Mesh load_gltf(const std::string& path, const GltfOptions& options, std::vector<std::string>* warnings) {
  tinygltf::TinyGLTF loader;
  loader.SetImageLoader(decode_image, nullptr);
  tinygltf::Model model;
  std::string err, warn;
  const bool ok = ends_with(path, ".glb") ? loader.LoadBinaryFromFile(&model, &err, &warn, path)
                                          : loader.LoadASCIIFromFile(&model, &err, &warn, path);
  auto trim = [](std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    return s;
  };
  warn = trim(warn), err = trim(err);
  if (warnings && !warn.empty()) warnings->push_back(warn);
  if (!ok) throw std::runtime_error(err.empty() ? "cannot parse the glTF file" : err);
  Mat4 root;
  if (options.y_up) {
    root.m[1][1] = 0, root.m[1][2] = -1;  // (x, y, z) -> (x, -z, y): glTF +y (up) becomes +z
    root.m[2][1] = 1, root.m[2][2] = 0;
  }
  Mesh mesh = Loader(model, options, warnings).load(root);
  if (mesh.triangles() == 0) throw std::runtime_error("no usable triangles");
  return mesh;
}

}  // namespace ro
