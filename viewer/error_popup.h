// Errors after the window opened (bad data, model mismatch, an unwritable file): a modal ImGui popup, one
// message at a time, never a crash.
#pragma once

#include <deque>
#include <string>

namespace lact::viewer {

class ErrorPopup {
 public:
  void show(const std::string& message);
  void draw();  // every frame, inside the ImGui frame
  bool open() const { return !messages_.empty(); }

 private:
  std::deque<std::string> messages_;
  bool opened_ = false;
};

}  // namespace lact::viewer
