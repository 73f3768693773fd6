// The LaCT object layout: DIR/<object>/opencv_cameras.json + DIR/<object>/NNN.png, and DIR/index.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cameras.h"
#include "rasterizer.h"

namespace ro {

// PNG bytes of an RGBA image (8-bit, colour type 6). Deterministic.
std::vector<uint8_t> encode_png(const Image& image);
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

// "000.png", "001.png", ... (more digits when there are more than 1000 views).
std::string view_file_name(int index, int count);

// The per-object camera file: a JSON list of {w, h, fx, fy, cx, cy, w2c (4x4 row-major), file_path}, one per view,
// in the key order of LaCT's GSO samples.
std::string cameras_json(const std::vector<Camera>& cameras, const std::vector<std::string>& files);

// Writes dir/NNN.png for every view and then dir/opencv_cameras.json (last, so that a folder with a camera file
// is complete). Creates dir.
void write_object_folder(const std::string& dir, const std::vector<Camera>& cameras, const std::vector<Image>& images);

// out_dir/index.json: a JSON list of "<name>/opencv_cameras.json", relative to out_dir.
void write_index(const std::string& out_dir, const std::vector<std::string>& names);

}  // namespace ro
