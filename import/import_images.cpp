#include "import/import_images.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "datasets/image_format.h"
#include "datasets/image_io.h"
#include "import/duplicate_pictures.h"
#include "import/image_orientation.h"
#include "system/error.h"
#include "system/file_io.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxPhotoBytes = uint64_t{512} << 20;

// The regular, non-hidden files of `folder`, sorted by name (byte order).
std::vector<fs::path> folder_files(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw Error(folder, "no such folder");
  std::vector<fs::path> files;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->path().filename().string().rfind('.', 0) == 0 || !it->is_regular_file(type_ec)) continue;
    files.push_back(it->path());
  }
  if (ec) throw Error(folder, "cannot list the folder (" + ec.message() + ")");
  std::sort(files.begin(), files.end());
  return files;
}

void write_png_file(const Rgba8Image& image, const fs::path& path) {
  Image rgb;
  rgb.width = image.width, rgb.height = image.height;
  rgb.rgb.resize(static_cast<size_t>(image.width) * image.height * 3);
  for (size_t p = 0; p < static_cast<size_t>(image.width) * image.height; ++p)
    for (int c = 0; c < 3; ++c) rgb.rgb[p * 3 + c] = image.pixels[p * 4 + c] / 255.0f;
  write_png(path.string(), rgb);
}

// An upright, capped image as PNG: its name in images/ ("NAME.png", "NAME-2.png" when taken).
std::string write_converted(const Rgba8Image& image, const fs::path& source, const fs::path& out,
                            std::vector<std::string>& taken) {
  std::string name = source.stem().string() + ".png";
  for (int i = 2; std::find(taken.begin(), taken.end(), name) != taken.end(); ++i)
    name = source.stem().string() + "-" + std::to_string(i) + ".png";
  write_png_file(image, out / name);
  return name;
}

// The image at the size COLMAP works on it, written under `record.name` into the estimation folder when that
// is larger than it is in images/ (`full`: upright, not shrunk). Never below the size in images/.
void write_estimation(const Rgba8Image& full, const EstimationImages& estimation, ImportedImage& record,
                      ImportedImages& result) {
  if (estimation.folder.empty()) return;
  const int cap = estimation.max_side <= 0 ? 0 : std::max(estimation.max_side, std::max(record.width, record.height));
  const Rgba8Image image = shrink_to_long_side(full, cap);
  if (image.width == record.width && image.height == record.height) return;
  write_png_file(image, fs::path(estimation.folder) / record.name);
  record.colmap_width = image.width, record.colmap_height = image.height;
  result.estimation = true;
}

// The reason an Error from reading or decoding `file` gives, without the file's name it starts with.
std::string reason_of(const Error& e, const fs::path& file) {
  const std::string text = e.what(), prefix = file.string() + ": ";
  return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
}

// Why a file that read_whole_file or decode_image refused is skipped.
std::string skip_reason(const std::string& why) {
  const bool too_big =
      why.find("more than the") != std::string::npos || why.find("exceeds the limit") != std::string::npos;
  return (too_big ? "over the size limit (" : "undecodable (") + why + ")";
}

// The file's bytes as a PNG or JPEG, or the reason it is skipped (`bytes` then unset).
std::string read_photo(const fs::path& file, std::string& bytes) {
  try {
    bytes = read_whole_file(file.string(), kMaxPhotoBytes);
  } catch (const Error& e) {
    return skip_reason(reason_of(e, file));
  }
  const SniffedFormat format = sniff_image_format(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return format.format == ImageFormat::other ? not_png_or_jpeg(format, bytes.size()) : "";
}

// The picture of PNG or JPEG bytes as a viewer shows it (a JPEG turned by its EXIF orientation).
Rgba8Image decode_upright(const fs::path& file, const std::string& bytes, int orientation) {
  Rgba8Image image = decode_image(file.string(), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (orientation != 1) image = apply_exif_orientation(image, orientation);
  return image;
}

int orientation_of(const std::string& bytes) {
  const SniffedFormat format = sniff_image_format(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return format.format == ImageFormat::jpeg ? jpeg_exif_orientation(bytes) : 1;
}

// A file taken earlier, read upright again (DuplicatePictures confirms a match of hashes with it).
Rgba8Image read_upright(const std::string& file) {
  std::string bytes;
  const std::string why = read_photo(file, bytes);
  if (!why.empty()) throw Error(file, why);
  return decode_upright(file, bytes, orientation_of(bytes));
}

// Imports one image file; the reason it is skipped when it is not a readable PNG or JPEG, or the same picture
// as one taken before it, else "".
std::string import_one(const fs::path& file, const fs::path& out, int max_side, const EstimationImages& estimation,
                       ImportedImages& result, DuplicatePictures& taken) {
  std::string bytes;
  const std::string unreadable = read_photo(file, bytes);
  if (!unreadable.empty()) return unreadable;
  const int orientation = orientation_of(bytes);
  Rgba8Image full;
  try {
    full = decode_upright(file, bytes, orientation);
  } catch (const Error& e) {
    return skip_reason(reason_of(e, file));
  }
  const std::string twin = taken.earlier_copy(full, file.string(), file.filename().string());
  if (!twin.empty()) return "the same picture as " + twin + " (a copy adds no view)";
  ImportedImage record;
  record.name = file.filename().string();
  // A name a converted image already took ("a.jpg" written as a.png, then "a.png") is converted too (a-2.png).
  const bool name_taken = std::find(result.names.begin(), result.names.end(), record.name) != result.names.end();
  if (name_taken || orientation != 1 || (max_side > 0 && std::max(full.width, full.height) > max_side)) {
    const Rgba8Image image = shrink_to_long_side(full, max_side);
    record.name = write_converted(image, file, out, result.names);
    record.width = image.width, record.height = image.height;
  } else {
    write_file_atomically((out / record.name).string(), bytes);
    record.width = full.width, record.height = full.height;
  }
  record.colmap_width = record.width, record.colmap_height = record.height;
  record.camera = jpeg_exif_camera(bytes);  // "" for a PNG
  write_estimation(full, estimation, record, result);
  result.names.push_back(record.name);
  result.images.push_back(std::move(record));
  return "";
}

// Whether the file's first bytes are a PNG's or a JPEG's (its content is not decoded).
bool starts_like_an_image(const fs::path& file) {
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (!f) return false;
  uint8_t head[32];
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return sniff_image_format(head, n).format != ImageFormat::other;
}

}  // namespace

std::string images_subfolder_hint(const std::string& folder) {
  constexpr int kMaxLooked = 100000;  // files looked at in all: a hint, not a crawl of a whole disk
  std::error_code ec;
  std::string best;
  int best_count = 0, looked = 0;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end && looked < kMaxLooked; it.increment(ec)) {
    std::error_code type_ec;
    const std::string name = it->path().filename().string();
    if (name.rfind('.', 0) == 0 || !it->is_directory(type_ec)) continue;
    int count = 0;
    for (fs::directory_iterator file(it->path(), type_ec), stop; !type_ec && file != stop && looked < kMaxLooked;
         file.increment(type_ec)) {
      std::error_code file_ec;
      if (file->path().filename().string().rfind('.', 0) == 0 || !file->is_regular_file(file_ec)) continue;
      ++looked;
      count += starts_like_an_image(file->path()) ? 1 : 0;
    }
    if (count > best_count) best = name, best_count = count;
  }
  if (best_count == 0) return "";
  return "the subfolder " + best + "/ holds " + std::to_string(best_count) + " PNG/JPEG image(s): name it (" +
         (fs::path(folder) / best).string() + ")";
}

ImportedImages import_image_folder(const std::string& folder, const std::string& images_out, int max_side,
                                   const EstimationImages& estimation) {
  ImportedImages result;
  DuplicatePictures taken(read_upright);
  for (const fs::path& file : folder_files(folder)) {
    ++result.files;
    std::string reason = import_one(file, images_out, max_side, estimation, result, taken);
    if (!reason.empty()) result.skipped.push_back({file.filename().string(), std::move(reason)});
  }
  std::sort(result.names.begin(), result.names.end());
  std::sort(result.images.begin(), result.images.end(),
            [](const ImportedImage& a, const ImportedImage& b) { return a.name < b.name; });
  if (!result.images.empty()) result.width = result.images[0].width, result.height = result.images[0].height;
  // COLMAP reads one folder: the images no larger for it than in images/ are copied there too.
  for (const ImportedImage& image : result.images)
    if (result.estimation && image.colmap_width == image.width && image.colmap_height == image.height)
      fs::copy_file(fs::path(images_out) / image.name, fs::path(estimation.folder) / image.name,
                    fs::copy_options::overwrite_existing);
  return result;
}

}  // namespace lact
