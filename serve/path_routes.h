// The page's keyframe path editor on the server (docs/guide/serve.md): the interpolation the timeline preview and
// the video use (core/camera_geometry.h interpolate_path_frames, the one `lact path interpolate` uses), and named
// camera paths saved under --out/paths. No socket: serve/http_session.cpp answers with these, and
// tests/cli/serve_paths_test.py checks them through a real server. Every refusal is a PathRefusal: a status, one line.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace lact::serve {

struct PathLimits {
  int max_keys = 100;          // keyframes of one path
  int max_frames = 2000;       // frames interpolated or saved (--max-video-frames)
  int max_side = 1024;         // --max-side
  int patch = 8;               // every side a multiple of it
  size_t max_bytes = 4 << 20;  // a saved file read back
  size_t max_saved = 1000;     // saved paths in the folder (the most GET /api/paths lists): a new name past it is 507
};

struct PathRefusal {
  int status;
  std::string message;
};

// POST /api/path/interpolate: {"keyframes": [frame, ...], "frames": N, "smoothness": s (0..1, default 0)} ->
// {"frames": [frame, ...]}: interpolate_path_frames(keyframes, N, s); one keyframe gives N copies of it.
nlohmann::json interpolate_body(const std::string& body, const PathLimits& limits);

// A saved path's name: 1 to 64 of A-Z a-z 0-9 . _ -, not starting with '.', without "..". PathRefusal 400 else.
void check_path_name(const std::string& name);

// GET /api/paths: {"paths": [names]} of the regular NAME.json files in `folder` (sorted; none when it is absent;
// the first 1000 by name, of at most 100000 entries read).
nlohmann::json list_paths(const std::string& folder);

// GET /api/paths/NAME: the file's text (a lact camera path); 404 when there is none.
std::string load_path(const std::string& folder, const std::string& name, const PathLimits& limits);

// POST /api/paths/NAME: `body`, a lact camera path (its frames checked as a video's; optional "keyframes",
// "smoothness", "fps", "duration" of the editor), written to folder/NAME.json atomically; 409 when the file exists
// and `replace` is false; with `replace` the new file is written beside it and renamed over it, so a failed write
// (500) keeps the old one whole; 507 for a new name when the folder holds limits.max_saved paths (a client cannot
// fill the disk). Answers {"name", "file", "frames"}.
nlohmann::json save_path(const std::string& folder, const std::string& name, const std::string& body, bool replace,
                         const PathLimits& limits);

}  // namespace lact::serve
