// Procedural objects: textured primitives, procedural textures, and seeded random compositions of them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "mesh.h"
#include "rng.h"

namespace ro {

// Unit-sized primitives centred at the origin (extent 1 along each axis they span), one material (id 0, left
// for the caller to fill), smooth normals where the surface is smooth, UVs in [0, uv_repeat].
enum class Primitive { Box, Sphere, Cylinder, Cone, Torus, Count };
Mesh make_primitive(Primitive kind, float uv_repeat = 1.0f);
const char* primitive_name(Primitive kind);

// Random procedural textures (size x size, sRGB RGBA8, opaque): stripes, checkers, value noise, dots, glyphs.
enum class Pattern { Stripes, Checkers, Noise, Dots, Glyphs, Count };
std::shared_ptr<const Texture> make_pattern_texture(Pattern kind, Rng& rng, int size = 256);
const char* pattern_name(Pattern kind);

// A random composition of 2-6 textured primitives with random transforms, normalised to [-1,1]^3 (z up).
// Depends only on the seed.
Mesh make_procedural_object(uint64_t seed, const std::string& name);

}  // namespace ro
