// The images `lact import` hands to COLMAP: every PNG or JPEG in a folder (by content, never by name), turned
// upright by its EXIF orientation and capped at a working size, in images/ of the scene being made. Other files
// are skipped, each listed with why (not an image, undecodable, over a size limit, the same picture as an earlier
// file: import/duplicate_pictures.h), never an error by themselves.
#pragma once

#include <string>
#include <vector>

namespace lact {

struct SkippedFile {
  std::string name;    // the file's name in the folder
  std::string reason;  // "not a PNG or JPEG (looks like GIF)", "undecodable (cannot decode JPEG: ...)", "over
                       // the size limit (...)", "the same picture as a.jpg (...)"
};

struct ImportedImages {
  int files = 0;                     // regular files in the folder (hidden ones ignored)
  std::vector<SkippedFile> skipped;  // files that are not a readable PNG or JPEG, in name order
  std::vector<std::string> names;    // the images written (file names in images/), sorted
  bool sizes_differ = false;         // not every image has the same width x height (per-image cameras)
  int width = 0, height = 0;         // the first image's size as written
};

// Copies the images of `folder` into `images_out` (which exists): a file already upright and within
// `max_side` (long side; 0: no cap) byte for byte under its own name, any other decoded, turned, shrunk and
// written as NAME.png.
ImportedImages import_image_folder(const std::string& folder, const std::string& images_out, int max_side);

// For a folder with too few images: "the subfolder images/ holds 498 PNG/JPEG image(s): name it (FOLDER/images)"
// for the subfolder (not hidden) holding the most files that start as a PNG or JPEG does; "" when none holds one.
std::string images_subfolder_hint(const std::string& folder);

}  // namespace lact
