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

// One image written: its size in images/, the size COLMAP works on it at, and the camera its EXIF names.
struct ImportedImage {
  std::string name;                         // in images/ (and in the estimation folder)
  int width = 0, height = 0;                // as written in images/
  int colmap_width = 0, colmap_height = 0;  // as COLMAP sees it (the same unless an estimation folder is made)
  std::string camera;                       // EXIF "Make Model", or ""
};

struct ImportedImages {
  int files = 0;                      // regular files in the folder (hidden ones ignored)
  std::vector<SkippedFile> skipped;   // files that are not a readable PNG or JPEG, in name order
  std::vector<std::string> names;     // the images written (file names in images/), sorted
  std::vector<ImportedImage> images;  // the same, with their sizes and cameras, sorted by name
  int width = 0, height = 0;          // the first image's size as written
  bool estimation = false;            // COLMAP works on the estimation folder (some image is larger there)
};

// Where and at what size COLMAP sees the images, when not as written: `folder` (which exists) gets every image
// with its long side capped at `max_side` (0: as it is), never below its size in images/.
struct EstimationImages {
  std::string folder;
  int max_side = 0;
};

// Copies the images of `folder` into `images_out` (which exists): a file already upright and within
// `max_side` (long side; 0: no cap) byte for byte under its own name, any other decoded, turned, shrunk and
// written as NAME.png. With `estimation`, each image is also written there under the same name (as PNG) at
// its size for COLMAP; when that is images/'s size for every image, the folder is left empty and
// `estimation` false in the result.
ImportedImages import_image_folder(const std::string& folder, const std::string& images_out, int max_side,
                                   const EstimationImages& estimation = {});

// For a folder with too few images: "the subfolder images/ holds 498 PNG/JPEG image(s): name it (FOLDER/images)"
// for the subfolder (not hidden) holding the most files that start as a PNG or JPEG does; "" when none holds one.
std::string images_subfolder_hint(const std::string& folder);

}  // namespace lact
