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

// A uniformly distributed rotation, or with probability 1/2 a rotation about z only (the part stays upright).
Mat4 random_rotation(Rng& rng);

// Which generator the procedural objects come from: Primitives = make_procedural_object (the first style, kept
// byte-identical); Assembly = make_assembly_object, closer to scanned everyday objects and toys.
enum class ProceduralStyle { Primitives, Assembly };

// A toy-like assembly, normalised to [-1,1]^3 (z up): a body of 1-3 large parts (beams, plates, blocks, some
// deformed) with 6-24 small parts (knobs, wheels, pegs, rods) attached to its surface, in a plastic palette,
// mostly plain colours, some patterned, most with a specular highlight. With photographs (not null, not empty)
// about a third of the bodies and a sixth of the small parts wear photo crops instead. Depends only on the seed
// (and the photographs).
class PhotoLibrary;
Mesh make_assembly_object(uint64_t seed, const std::string& name, const PhotoLibrary* photos = nullptr);

// Bends the shape of a unit primitive (before it is scaled and placed) with a random mix of taper, twist, bend
// and a smooth bulge, then recomputes its normals. The result stays inside [-1.5, 1.5]^3.
void deform_primitive(Mesh& part, Rng& rng);

// Vertex normals from the area-weighted normals of the triangles around each vertex; duplicated seam vertices
// are smoothed together, while vertices whose original normals differ a lot (a box's corners, a cylinder's rim)
// stay sharp edges.
void recompute_normals(Mesh& mesh);

}  // namespace ro
