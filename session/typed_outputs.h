// The files a front end writes under names its user types while it runs (the desktop viewer's screenshot and
// camera path fields): the rules of every file named on a command line (system/output_files.h's
// check_named_output), decided here without a window so a unit test can drive them. A name is refused when it
// is one of the session's inputs (the model, the state, the LPIPS weights, the scene's camera file and images;
// also through a link or another spelling, even with --force), when it is under /dev, /proc or /sys, when its
// folder cannot be written, and when it exists, unless the session was started with --force (the window has no
// confirmation of its own) or the file is one this session wrote and nobody changed since (saving a camera path
// again under its name). The refusal is one Error line naming the field, the file and the problem.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "session/scene_source.h"
#include "system/output_files.h"

namespace lact::session {

// The names a screenshot `path` stands for: {PATH.png (the window), PATH.view.png (the novel view alone),
// PATH.json (the camera and scores)}; a ".png" that `path` ends with is not doubled.
std::vector<std::string> screenshot_files(const std::string& path);

// Error(field, ...) when `path` names a folder ("shots/", ".", ".."): its three files would be the hidden
// ".png", ".view.png" and ".json" in it, which no one asked for.
void check_screenshot_name(const std::string& path, const std::string& field);

// The files `source` reads: its model, state, LPIPS weights, the scene's camera file and every view's image.
InputFiles session_inputs(const SceneSource& source);

class TypedOutputs {
 public:
  // `force`: the session was started with --force, so an existing file (never an input) may be replaced.
  TypedOutputs(InputFiles inputs, bool force) : inputs_(std::move(inputs)), force_(force) {}

  // Just before the write, Error("screenshot: '<file>' <problem>") unless all three screenshot_files(`path`)
  // may be written (their folder is made when missing).
  void check_screenshot(const std::string& path) const;
  // Just before the write, Error("path file: '<file>' <problem>") unless the camera path file `file` may be
  // written (its folder must exist).
  void check_path_file(const std::string& file) const;
  // Just after `file` (a name checked here) was written: until it changes, this session's own file, which a
  // later check lets be replaced without --force. Known by what it is, not how it is spelled: its device and
  // inode, and its size and modification time as written (a file the user put there or edited since is theirs).
  void wrote(const std::string& file);
  // True when `file` (a link followed) is one wrote() recorded and nobody changed since: the desktop viewer's
  // export replaces its own path.mp4, which carries no mark of lact's, only then without --force.
  bool wrote_unchanged(const std::string& file) const;

 private:
  // What a written file looked like just after the write.
  struct Written {
    int64_t size = 0, modified_s = 0, modified_ns = 0;
    bool operator==(const Written& other) const {
      return size == other.size && modified_s == other.modified_s && modified_ns == other.modified_ns;
    }
  };
  void check(const std::string& file, const std::string& field, bool create_folder) const;
  InputFiles inputs_;
  bool force_;
  std::map<std::pair<uint64_t, uint64_t>, Written> written_;  // (device, inode) -> as this session left it
};

}  // namespace lact::session
