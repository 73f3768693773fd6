// COLMAP sparse models as COLMAP writes them (colmap mapper, ns-process-data's colmap/sparse/0, DL3DV's release,
// Gaussian-splatting repositories): cameras.bin + images.bin, or cameras.txt + images.txt (the binary pair is
// preferred when a folder holds both, as COLMAP does). points3D is not read. Parsed into plain structs, nothing
// converted (datasets/colmap_layout.cpp makes a Scene of them).
//
// Binary, little-endian:
//   cameras.bin: uint64 count; per camera uint32 camera_id, int32 model_id, uint64 width, uint64 height,
//                double params[n(model_id)]
//   images.bin:  uint64 count; per image uint32 image_id, double qw qx qy qz, double tx ty tz, uint32 camera_id,
//                name (bytes up to a NUL), uint64 num_points2D, then per point double x, double y, int64 point3D_id
// Text: '#' starts a comment line; cameras.txt: "CAMERA_ID MODEL_NAME WIDTH HEIGHT PARAMS..." per line;
// images.txt: two lines per image, "IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME" and its 2D points (possibly an
// empty line).
//
// Files are untrusted: counts are checked against the file size before anything is allocated, every number
// must be finite, ids unique, sizes within kMaxImageSide, names non-empty and at most 4096 bytes, every image's
// camera present; unknown model ids are refused naming the id. Each error is one line naming the file, the
// record and the field.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lact {

struct ColmapCamera {
  uint32_t id = 0;
  int model = 0;  // COLMAP's model id (colmap_model_name)
  int width = 0, height = 0;
  std::vector<double> params;  // in the model's order, e.g. PINHOLE fx fy cx cy
};

struct ColmapImage {
  uint32_t id = 0;
  std::array<double, 4> q{};  // qw qx qy qz: world-to-camera rotation (Hamilton), as stored (not normalised)
  std::array<double, 3> t{};  // world-to-camera translation
  uint32_t camera_id = 0;
  std::string name;  // relative to the image folder
};

struct ColmapModel {
  std::filesystem::path folder;
  bool binary = true;                 // read from the .bin pair (else .txt)
  std::vector<ColmapCamera> cameras;  // in file order
  std::vector<ColmapImage> images;    // in file order (the registered images)
};

// COLMAP's name of a camera model id ("PINHOLE"), or "" for an id COLMAP does not define (0..11 are known).
std::string colmap_model_name(int model_id);
// The model id of a name, or -1.
int colmap_model_id(const std::string& name);
// How many params the model has, or -1 for an unknown id.
int colmap_model_param_count(int model_id);

// Whether `folder` holds entries named cameras + images, .bin or .txt, of any file type (a FIFO or a link loop
// there is a model with a bad file, which read_colmap_model names).
bool is_colmap_model_folder(const std::filesystem::path& folder);

// Reads the model in `folder` (binary when cameras.bin and images.bin are there, else the text pair). Throws
// Error for anything malformed, including an image whose camera is missing.
ColmapModel read_colmap_model(const std::filesystem::path& folder);

// The single files (tests, fuzzing).
std::vector<ColmapCamera> read_colmap_cameras_binary(const std::string& path);
std::vector<ColmapImage> read_colmap_images_binary(const std::string& path);
std::vector<ColmapCamera> read_colmap_cameras_text(const std::string& path);
std::vector<ColmapImage> read_colmap_images_text(const std::string& path);

}  // namespace lact
