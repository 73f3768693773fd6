#include "writer.h"

#include <stb_image_write.h>  // from libstb (Debian's shared build)

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace ro {

namespace fs = std::filesystem;

namespace {

void append_bytes(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  const auto* p = static_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + size);
}

}  // namespace

std::vector<uint8_t> encode_png(const Image& image) {
  std::vector<uint8_t> out;
  if (!stbi_write_png_to_func(append_bytes, &out, image.width, image.height, 4, image.rgba.data(), image.width * 4))
    throw std::runtime_error("PNG encoding failed");
  return out;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error(path + ": cannot write");
}

std::string view_file_name(int index, int count) {
  int digits = 3;
  for (int n = 1000; n < count; n *= 10) ++digits;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*d.png", digits, index);
  return buf;
}

std::string cameras_json(const std::vector<Camera>& cameras, const std::vector<std::string>& files) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t i = 0; i < cameras.size(); ++i) {
    const Camera& c = cameras[i];
    nlohmann::ordered_json frame;
    frame["w"] = c.width;
    frame["h"] = c.height;
    frame["fx"] = c.fx;
    frame["fy"] = c.fy;
    frame["cx"] = c.cx;
    frame["cy"] = c.cy;
    nlohmann::ordered_json w2c = nlohmann::ordered_json::array();
    for (int r = 0; r < 4; ++r) {
      nlohmann::ordered_json row = nlohmann::ordered_json::array();
      for (int k = 0; k < 4; ++k) row.push_back(c.w2c.m[r][k]);
      w2c.push_back(row);
    }
    frame["w2c"] = w2c;
    frame["file_path"] = files[i];
    list.push_back(frame);
  }
  return list.dump(1) + "\n";
}

void write_object_folder(const std::string& dir, const std::vector<Camera>& cameras, const std::vector<Image>& images) {
  fs::create_directories(dir);
  std::vector<std::string> files;
  for (size_t i = 0; i < images.size(); ++i) {
    files.push_back(view_file_name(static_cast<int>(i), static_cast<int>(images.size())));
    write_file((fs::path(dir) / files.back()).string(), encode_png(images[i]));
  }
  const std::string json = cameras_json(cameras, files);
  write_file((fs::path(dir) / "opencv_cameras.json").string(), std::vector<uint8_t>(json.begin(), json.end()));
}

void write_index(const std::string& out_dir, const std::vector<std::string>& names) {
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& n : names) list.push_back(n + "/opencv_cameras.json");
  const std::string json = list.dump(1) + "\n";
  fs::create_directories(out_dir);
  write_file((fs::path(out_dir) / "index.json").string(), std::vector<uint8_t>(json.begin(), json.end()));
}

}  // namespace ro
